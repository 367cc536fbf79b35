// The in-memory AdmissionStore: every step is synchronous, so each is atomic on the one JS thread — the
// same unit a SQL store gets from one transaction. For tests, demos and one process. The async methods
// are the `AdmissionStore` interface; the `…Sync` twins (`SyncAdmissionSteps`) are the same steps
// without a promise, which the gate uses when it sees them.
import type { CausalNode } from './cascade.js';
import { admittedEnvelope, type Envelope, rootEnvelope, settledEnvelope } from './envelope.js';
import { blocks, type EnvNode, NO_LOAD, pathBlocks, pathOf, TenantState } from './memory-tenant.js';
import { type GlobalPolicy, globalPolicy, type TenantPolicy } from './policy.js';
import { RunIndex } from './run-index.js';
import { RunTable } from './run-table.js';
import { adjust, type SessionLoad, sessionBlock } from './session-pool.js';
import {
  type AdmissionKey,
  type AdmissionPlan,
  type AdmissionSnapshot,
  type AdmissionStore,
  type CommitResult,
  type Dispatch,
  type RunSlot,
  type Settlement,
  type SettleResult,
  type SyncAdmissionSteps,
  settleRefusal,
} from './store.js';
import { Wfq } from './wfq.js';

const NO_SESSIONS: SessionLoad = { total: 0, member: 0 };
const RACED: CommitResult = { status: 'raced' };
const RUN_EXISTS: CommitResult = { status: 'run_exists' };
const SLICE_EXISTS: CommitResult = { status: 'slice_exists' };

export class MemoryAdmissionStore implements AdmissionStore, SyncAdmissionSteps {
  private global: GlobalPolicy;
  private readonly tenants = new Map<string, TenantState>();
  /** The tenants by number (the run table's tenant column). */
  private readonly byNo: TenantState[] = [];
  private globalSessions: SessionLoad = NO_SESSIONS;
  /** Every admitted run, one row each (runs are never forgotten: getRun and idempotency need them). */
  private readonly table = new RunTable(1024);
  /** (tenant number, run id) → row. */
  private readonly ids = new RunIndex(this.table, 1024);
  private queue: Wfq;
  /** The commit's envelope path, reused across commits (drawn-from first, root last). */
  private readonly path: EnvNode[] = [];

  constructor(global: GlobalPolicy = globalPolicy()) {
    this.global = global;
    this.queue = new Wfq(global.agingMs, this.table);
  }

  async putTenant(tenant: string, policy: TenantPolicy): Promise<void> {
    let t = this.tenants.get(tenant);
    if (!t) {
      const root = { env: rootEnvelope(tenant, policy.budget, policy.inFlightCap), parent: null };
      t = new TenantState(this.tenants.size, tenant, policy, root, this.queue.tenant());
      this.tenants.set(tenant, t);
      this.byNo.push(t);
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
      this.queue = new Wfq(policy.agingMs, this.table);
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
        load: NO_LOAD,
        globalSessions: this.globalSessions,
      };
    }
    const table = this.table;
    const causer = key.causedByRunId === undefined ? -1 : this.ids.get(t.no, key.causedByRunId);
    const prior = t.prior(table, key.requestId, this.ids.get(t.no, key.requestId));
    return {
      prior: prior < 0 ? null : table.decision(prior, key.requestId),
      policy: t.policy,
      global: this.global,
      causer: causer < 0 ? null : table.slot(causer),
      path: causer < 0 ? [t.root.env] : pathOf(table.envNode[causer]!),
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
    const table = this.table;
    const ids = this.ids;
    const existing = ids.get(t.no, slot.runId); // one lookup for both checks when the ids are equal
    const own = decision.requestId === slot.runId ? existing : ids.get(t.no, decision.requestId);
    const prior = t.prior(table, decision.requestId, own);
    if (prior >= 0) return { status: 'duplicate', decision: table.decision(prior, decision.requestId) };
    if (existing >= 0) return RUN_EXISTS;
    if (plan.slice && t.envelopes.has(plan.slice.id)) return SLICE_EXISTS;
    const path = this.path;
    path.length = 0;
    for (const id of plan.pathIds) {
      const node = t.envelopes.get(id);
      if (!node) return RACED;
      path.push(node);
    }
    const causer = slot.causedByRunId === null ? -1 : ids.get(t.no, slot.causedByRunId);
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
        (causer < 0 || (guards.maxChildren !== null && table.children[causer]! >= guards.maxChildren)));
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
    const r = table.add(plan, { tenant: t.no, tenantId: t.id, env: drawn, causer });
    ids.add(t.no, slot.runId, r);
    if (decision.requestId !== slot.runId) t.decisions.set(decision.requestId, r);
    if (causer >= 0) {
      table.children[causer]!++;
      const siblings = t.children.get(causer);
      if (siblings) siblings.push(r);
      else t.children.set(causer, [r]);
    }
    if (slot.lifetime === 'session') {
      t.sessions = adjust(t.sessions, slot.member, 1);
      this.globalSessions = adjust(this.globalSessions, slot.member, 1);
      if (slot.expectedDurationMs !== null)
        t.sessionEnds.set(r, slot.admittedAt + slot.expectedDurationMs, 0);
    } else {
      t.countQueued(slot.class, 1);
      this.queue.enqueue(t.queue, r);
    }
    return { status: 'committed', decision };
  }

  async claim(capacity: number, now: number): Promise<Dispatch[]> {
    return this.claimSync(capacity, now);
  }

  claimSync(capacity: number, now: number): Dispatch[] {
    const out: Dispatch[] = [];
    const table = this.table;
    while (out.length < capacity) {
      const r = this.queue.next(now);
      if (r < 0) break;
      const t = this.byNo[table.tenant[r]!]!;
      const runClass = table.classOf(r);
      const admittedAt = table.enqueuedAt[r]!;
      table.setStatus(r, 'running');
      table.startedAt[r] = now;
      t.countQueued(runClass, -1);
      t.running++;
      const expected = table.expectedOf(r);
      if (expected !== null) t.runningEnds.set(r, now + expected, 0);
      if (t.running >= t.policy.maxConcurrent) this.queue.setBlocked(t.queue, true);
      out.push({
        runId: table.runId[r]!,
        tenant: t.id,
        class: runClass,
        enqueuedAt: admittedAt,
        waitedMs: now - admittedAt,
      });
    }
    return out;
  }

  async settle(s: Settlement): Promise<SettleResult> {
    return this.settleSync(s);
  }

  settleSync(s: Settlement): SettleResult {
    const t = this.tenants.get(s.tenant);
    const r = t ? this.ids.get(t.no, s.runId) : -1;
    if (!t || r < 0) return { settled: false, reason: 'unknown_run' };
    const table = this.table;
    const from = table.statusOf(r);
    const refused = settleRefusal(from, s);
    if (refused !== null) return { settled: false, reason: refused };
    const member = table.member[r] === 1;
    if (from === 'queued') {
      this.queue.remove(t.queue, r);
      t.countQueued(table.classOf(r), -1);
    } else if (table.isSession(r)) {
      t.sessions = adjust(t.sessions, member, -1);
      this.globalSessions = adjust(this.globalSessions, member, -1);
      t.sessionEnds.delete(r);
    } else {
      t.running--;
      t.runningEnds.delete(r);
      if (t.running < t.policy.maxConcurrent) this.queue.setBlocked(t.queue, false);
    }
    for (let n = table.envNode[r] ?? null; n; n = n.parent) n.env = settledEnvelope(n.env, s.actuals);
    table.setStatus(r, s.status);
    return { settled: true, from, slot: table.slot(r) }; // its status never changes again
  }

  async getRun(tenant: string, runId: string): Promise<RunSlot | null> {
    const t = this.tenants.get(tenant);
    const r = t ? this.ids.get(t.no, runId) : -1;
    return r < 0 ? null : this.table.slot(r);
  }

  async getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null> {
    return this.tenants.get(tenant)?.envelopes.get(envelopeId)?.env ?? null;
  }

  async causalSubtree(tenant: string, runId: string): Promise<CausalNode[]> {
    const t = this.tenants.get(tenant);
    const r = t ? this.ids.get(t.no, runId) : -1;
    if (!t || r < 0) return [];
    const table = this.table;
    const out: CausalNode[] = [];
    const stack = [r];
    while (stack.length > 0) {
      const n = stack.pop()!;
      const { runId: id, causedByRunId, status, cause, kind } = table.slot(n);
      out.push({ runId: id, causedByRunId, status, cause, kind });
      stack.push(...(t.children.get(n) ?? []));
    }
    return out;
  }
}
