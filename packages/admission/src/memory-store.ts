// The in-memory AdmissionStore: every step is synchronous, so each is atomic on the one JS thread — the
// same unit a SQL store gets from one transaction. For tests, demos and one process. The async methods
// are the `AdmissionStore` interface; the `…Sync` twins (`SyncAdmissionSteps`) are the same steps
// without a promise, which the gate uses when it sees them.
import { isTerminalStatus } from '@everdict/run-model';
import type { CausalNode } from './cascade.js';
import {
  admittedEnvelope,
  type Envelope,
  exhaustedResource,
  rootEnvelope,
  settledEnvelope,
} from './envelope.js';
import { type EnvNode, pathOf, RunRecord, slotOf, TenantState } from './memory-tenant.js';
import { type GlobalPolicy, globalPolicy, type TenantPolicy } from './policy.js';
import { adjust, type SessionLoad, sessionBlock } from './session-pool.js';
import type {
  AdmissionKey,
  AdmissionPlan,
  AdmissionSnapshot,
  AdmissionStore,
  CommitResult,
  Dispatch,
  RunSlot,
  Settlement,
  SettleResult,
  SyncAdmissionSteps,
} from './store.js';
import { Wfq } from './wfq.js';

const NO_SESSIONS: SessionLoad = { total: 0, member: 0 };
const RACED: CommitResult = { status: 'raced' };
const RUN_EXISTS: CommitResult = { status: 'run_exists' };
const SLICE_EXISTS: CommitResult = { status: 'slice_exists' };

export class MemoryAdmissionStore implements AdmissionStore, SyncAdmissionSteps {
  private global: GlobalPolicy;
  private readonly tenants = new Map<string, TenantState>();
  private globalSessions: SessionLoad = NO_SESSIONS;
  private queue: Wfq<RunRecord>;
  /** The commit's envelope path, reused across commits (drawn-from first, root last). */
  private readonly path: EnvNode[] = [];

  constructor(global: GlobalPolicy = globalPolicy()) {
    this.global = global;
    this.queue = new Wfq<RunRecord>(global.agingMs);
  }

  async putTenant(tenant: string, policy: TenantPolicy): Promise<void> {
    let t = this.tenants.get(tenant);
    if (!t) {
      const root = { env: rootEnvelope(tenant, policy.budget, policy.inFlightCap), parent: null };
      t = new TenantState(policy, root, this.queue.tenant());
      this.tenants.set(tenant, t);
    }
    t.policy = policy;
    const root = t.root.env;
    t.root.env = {
      id: root.id,
      parentId: null,
      tenant,
      caps: policy.budget,
      spent: root.spent,
      inFlight: root.inFlight,
      inFlightCap: policy.inFlightCap,
    };
    this.queue.setWeight(t.queue, policy.weight);
    this.queue.setBlocked(t.queue, t.running >= policy.maxConcurrent);
  }

  async putGlobal(policy: GlobalPolicy): Promise<void> {
    if (policy.agingMs !== this.global.agingMs) {
      if (this.queue.size > 0)
        throw new RangeError('agingMs cannot change while runs are queued in the memory store');
      this.queue = new Wfq<RunRecord>(policy.agingMs);
      for (const t of this.tenants.values()) {
        t.queue = this.queue.tenant();
        this.queue.setWeight(t.queue, t.policy.weight);
        this.queue.setBlocked(t.queue, t.running >= t.policy.maxConcurrent);
      }
    }
    this.global = policy;
  }

  async setAgentEnabled(tenant: string, agentId: string, enabled: boolean): Promise<void> {
    const t = this.tenants.get(tenant);
    if (!t) return;
    if (enabled) t.disabledAgents.delete(agentId);
    else t.disabledAgents.add(agentId);
  }

  async loadAdmission(key: AdmissionKey): Promise<AdmissionSnapshot> {
    return this.loadAdmissionSync(key);
  }

  loadAdmissionSync(key: AdmissionKey): AdmissionSnapshot {
    const t = this.tenants.get(key.tenant);
    if (!t) {
      return {
        prior: null,
        policy: null,
        global: this.global,
        causer: null,
        path: [],
        sliceTaken: false,
        agentDisabled: false,
        load: {
          queued: 0,
          queuedByClass: { interactive: 0, background: 0, batch: 0 },
          running: 0,
          sessions: NO_SESSIONS,
          earliestRunningEnd: null,
          earliestSessionEnd: null,
        },
        globalSessions: this.globalSessions,
      };
    }
    const causer = key.causedByRunId === undefined ? undefined : t.runs.get(key.causedByRunId);
    const prior = t.decisions.get(key.requestId);
    return {
      prior: prior ? prior.decision : null,
      policy: t.policy,
      global: this.global,
      causer: causer ? slotOf(causer) : null,
      path: causer ? pathOf(causer.env) : [t.root.env],
      sliceTaken: key.sliceId !== undefined && t.envelopes.has(key.sliceId),
      agentDisabled: key.agentId !== undefined && t.disabledAgents.has(key.agentId),
      load: {
        queued: t.queued,
        queuedByClass: { interactive: t.interactive, background: t.background, batch: t.batch },
        running: t.running,
        sessions: t.sessions,
        earliestRunningEnd: t.runningEnds.peekPriority() ?? null,
        earliestSessionEnd: t.sessionEnds.peekPriority() ?? null,
      },
      globalSessions: this.globalSessions,
    };
  }

  async commitAdmission(plan: AdmissionPlan): Promise<CommitResult> {
    return this.commitAdmissionSync(plan);
  }

  commitAdmissionSync(plan: AdmissionPlan): CommitResult {
    const { decision, slot, guards } = plan;
    const t = this.tenants.get(slot.tenant);
    if (!t) return RACED;
    const prior = t.decisions.get(decision.requestId);
    if (prior) return { status: 'duplicate', decision: prior.decision };
    if (t.runs.has(slot.runId)) return RUN_EXISTS;
    if (plan.slice && t.envelopes.has(plan.slice.id)) return SLICE_EXISTS;
    const path = this.path;
    path.length = 0;
    for (const id of plan.pathIds) {
      const node = t.envelopes.get(id);
      if (!node) return RACED;
      path.push(node);
    }
    const causer = slot.causedByRunId === null ? undefined : t.runs.get(slot.causedByRunId);
    const pools = guards.sessionPools;
    const raced =
      (plan.slice !== null && blocks(plan.slice, guards.estimate)) ||
      pathBlocks(path, guards.estimate) ||
      (guards.maxQueued !== null && t.queued >= guards.maxQueued) ||
      (pools !== null &&
        sessionBlock(
          { load: t.sessions, caps: pools.tenant },
          { load: this.globalSessions, caps: pools.global },
          slot.member,
        ) !== null) ||
      (slot.causedByRunId !== null &&
        (!causer || (guards.maxChildren !== null && causer.children >= guards.maxChildren)));
    if (raced) return RACED;

    for (const node of path) node.env = admittedEnvelope(node.env);
    let drawn: EnvNode | null = path[0] ?? null;
    if (plan.slice) {
      const parentId = plan.slice.parentId;
      const parent = parentId === null ? null : (t.envelopes.get(parentId) ?? null);
      drawn = { env: admittedEnvelope(plan.slice), parent };
      t.envelopes.set(plan.slice.id, drawn);
    }
    if (drawn?.env.id !== slot.envelopeId) drawn = t.envelopes.get(slot.envelopeId) ?? null;
    const rec = new RunRecord(plan, t, drawn);
    t.runs.set(rec.runId, rec);
    t.decisions.set(decision.requestId, rec);
    if (causer) {
      causer.children++;
      const siblings = t.children.get(causer.runId);
      if (siblings) siblings.push(rec.runId);
      else t.children.set(causer.runId, [rec.runId]);
    }
    if (rec.lifetime === 'session') {
      t.sessions = adjust(t.sessions, rec.member, 1);
      this.globalSessions = adjust(this.globalSessions, rec.member, 1);
      if (rec.expectedDurationMs !== null)
        t.sessionEnds.set(rec.runId, rec.admittedAt + rec.expectedDurationMs, 0);
    } else {
      t.countQueued(rec.class, 1);
      this.queue.enqueue(t.queue, rec);
    }
    return { status: 'committed', decision };
  }

  async claim(capacity: number, now: number): Promise<Dispatch[]> {
    return this.claimSync(capacity, now);
  }

  claimSync(capacity: number, now: number): Dispatch[] {
    const out: Dispatch[] = [];
    while (out.length < capacity) {
      const rec = this.queue.next(now);
      if (!rec) break;
      const t = rec.owner;
      rec.status = 'running';
      rec.startedAt = now;
      t.countQueued(rec.class, -1);
      t.running++;
      if (rec.expectedDurationMs !== null) t.runningEnds.set(rec.runId, now + rec.expectedDurationMs, 0);
      if (t.running >= t.policy.maxConcurrent) this.queue.setBlocked(t.queue, true);
      out.push({
        runId: rec.runId,
        tenant: rec.tenant,
        class: rec.class,
        enqueuedAt: rec.admittedAt,
        waitedMs: now - rec.admittedAt,
      });
    }
    return out;
  }

  async settle(s: Settlement): Promise<SettleResult> {
    return this.settleSync(s);
  }

  settleSync(s: Settlement): SettleResult {
    const t = this.tenants.get(s.tenant);
    const rec = t?.runs.get(s.runId);
    if (!t || !rec) return { settled: false, reason: 'unknown_run' };
    if (isTerminalStatus(rec.status)) return { settled: false, reason: 'already_settled' };
    if (s.ifStatus !== undefined && rec.status !== s.ifStatus)
      return { settled: false, reason: 'status_changed' };
    if (rec.status === 'queued' && s.status === 'succeeded') return { settled: false, reason: 'not_started' };
    const from = rec.status;
    if (from === 'queued') {
      this.queue.remove(t.queue, rec);
      t.countQueued(rec.class, -1);
    } else if (rec.lifetime === 'session') {
      t.sessions = adjust(t.sessions, rec.member, -1);
      this.globalSessions = adjust(this.globalSessions, rec.member, -1);
      if (rec.expectedDurationMs !== null) t.sessionEnds.delete(rec.runId);
    } else {
      t.running--;
      if (rec.expectedDurationMs !== null) t.runningEnds.delete(rec.runId);
      if (t.running < t.policy.maxConcurrent) this.queue.setBlocked(t.queue, false);
    }
    for (let n = rec.env; n; n = n.parent) n.env = settledEnvelope(n.env, s.actuals);
    rec.status = s.status;
    return { settled: true, from, slot: slotOf(rec) }; // its status never changes again
  }

  async getRun(tenant: string, runId: string): Promise<RunSlot | null> {
    const rec = this.tenants.get(tenant)?.runs.get(runId);
    return rec ? slotOf(rec) : null;
  }

  async getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null> {
    return this.tenants.get(tenant)?.envelopes.get(envelopeId)?.env ?? null;
  }

  async causalSubtree(tenant: string, runId: string): Promise<CausalNode[]> {
    const t = this.tenants.get(tenant);
    const out: CausalNode[] = [];
    const stack = [runId];
    while (t && stack.length > 0) {
      const id = stack.pop()!;
      const rec = t.runs.get(id);
      if (!rec) continue;
      out.push({
        runId: id,
        causedByRunId: rec.causedByRunId,
        status: rec.status,
        cause: rec.cause,
        kind: rec.kind,
      });
      stack.push(...(t.children.get(id) ?? []));
    }
    return out;
  }
}

function pathBlocks(path: readonly EnvNode[], estimate: AdmissionPlan['guards']['estimate']): boolean {
  for (const node of path) if (blocks(node.env, estimate)) return true;
  return false;
}

/** The envelope has no balance for the estimate, or is at its in-flight cap: a guard no longer holds. */
function blocks(env: Envelope, estimate: AdmissionPlan['guards']['estimate']): boolean {
  return exhaustedResource(env, estimate) !== null || env.inFlight >= env.inFlightCap;
}
