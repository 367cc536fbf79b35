// The in-memory AdmissionStore: every method body is synchronous after entry, so each is atomic on the
// one JS thread — the same unit a SQL store gets from one transaction. For tests, demos and one process.
import { isTerminalStatus } from '@everdict/run-model';
import type { CausalNode } from './cascade.js';
import {
  admitOnPath,
  type Envelope,
  exhaustion,
  inFlightBlock,
  rootEnvelope,
  rootEnvelopeId,
  settleOnPath,
} from './envelope.js';
import { FairQueue } from './fair-queue.js';
import { envelopePath, newTenantState, queuedTotal, type TenantState } from './memory-tenant.js';
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
  TenantLoad,
} from './store.js';

const NO_SESSIONS: SessionLoad = { total: 0, member: 0 };

function classCounts(t: TenantState): TenantLoad['queuedByClass'] {
  const q = t.queuedByClass;
  return { interactive: q.interactive, background: q.background, batch: q.batch };
}

export class MemoryAdmissionStore implements AdmissionStore {
  private global: GlobalPolicy;
  private readonly tenants = new Map<string, TenantState>();
  private globalSessions: SessionLoad = NO_SESSIONS;
  private queue: FairQueue;

  constructor(global: GlobalPolicy = globalPolicy()) {
    this.global = global;
    this.queue = new FairQueue(global.agingMs);
  }

  async putTenant(tenant: string, policy: TenantPolicy): Promise<void> {
    let t = this.tenants.get(tenant);
    if (!t) {
      t = newTenantState(policy);
      this.tenants.set(tenant, t);
    }
    t.policy = policy;
    const rootId = rootEnvelopeId(tenant);
    const root = t.envelopes.get(rootId);
    t.envelopes.set(
      rootId,
      root
        ? {
            id: root.id,
            parentId: null,
            tenant,
            caps: policy.budget,
            spent: root.spent,
            inFlight: root.inFlight,
            inFlightCap: policy.inFlightCap,
          }
        : rootEnvelope(tenant, policy.budget, policy.inFlightCap),
    );
    this.queue.setWeight(tenant, policy.weight);
    this.queue.setBlocked(tenant, t.running >= policy.maxConcurrent);
  }

  async putGlobal(policy: GlobalPolicy): Promise<void> {
    if (policy.agingMs !== this.global.agingMs) {
      if (this.queue.size > 0)
        throw new RangeError('agingMs cannot change while runs are queued in the memory store');
      this.queue = new FairQueue(policy.agingMs);
      for (const [tenant, t] of this.tenants) this.queue.setWeight(tenant, t.policy.weight);
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
    const t = this.tenants.get(key.tenant);
    const causer = key.causedByRunId === undefined ? undefined : t?.runs.get(key.causedByRunId);
    return {
      prior: t?.decisions.get(key.requestId) ?? null,
      policy: t?.policy ?? null,
      global: this.global,
      causer: causer ? { ...causer } : null,
      path: t ? envelopePath(t, causer ? causer.envelopeId : rootEnvelopeId(key.tenant)) : [],
      sliceTaken: key.sliceId !== undefined && (t?.envelopes.has(key.sliceId) ?? false),
      agentDisabled: key.agentId !== undefined && (t?.disabledAgents.has(key.agentId) ?? false),
      load: {
        queued: t ? queuedTotal(t) : 0,
        queuedByClass: t ? classCounts(t) : { interactive: 0, background: 0, batch: 0 },
        running: t?.running ?? 0,
        sessions: t ? t.sessions : NO_SESSIONS,
        earliestRunningEnd: t?.runningEnds.peekPriority() ?? null,
        earliestSessionEnd: t?.sessionEnds.peekPriority() ?? null,
      },
      globalSessions: this.globalSessions,
    };
  }

  async commitAdmission(plan: AdmissionPlan): Promise<CommitResult> {
    const { decision, slot, guards } = plan;
    const t = this.tenants.get(slot.tenant);
    if (!t) return { status: 'raced' };
    const prior = t.decisions.get(decision.requestId);
    if (prior) return { status: 'duplicate', decision: prior };
    if (t.runs.has(slot.runId)) return { status: 'run_exists' };
    if (plan.slice && t.envelopes.has(plan.slice.id)) return { status: 'slice_exists' };
    const path: Envelope[] = plan.slice ? [plan.slice] : [];
    for (const id of plan.pathIds) {
      const env = t.envelopes.get(id);
      if (!env) return { status: 'raced' };
      path.push(env);
    }
    const causer = slot.causedByRunId === null ? undefined : t.runs.get(slot.causedByRunId);
    const pools = guards.sessionPools;
    const raced =
      exhaustion(path, guards.estimate) !== null ||
      inFlightBlock(path) !== null ||
      (guards.maxQueued !== null && queuedTotal(t) >= guards.maxQueued) ||
      (pools !== null &&
        sessionBlock(
          { load: t.sessions, caps: pools.tenant },
          { load: this.globalSessions, caps: pools.global },
          slot.member,
        ) !== null) ||
      (slot.causedByRunId !== null &&
        (!causer || (guards.maxChildren !== null && causer.children >= guards.maxChildren)));
    if (raced) return { status: 'raced' };

    for (const env of admitOnPath(path)) t.envelopes.set(env.id, env);
    t.runs.set(slot.runId, slot); // the plan is the gate's own, never reused after a commit
    if (causer) {
      causer.children++;
      const siblings = t.children.get(causer.runId);
      if (siblings) siblings.push(slot.runId);
      else t.children.set(causer.runId, [slot.runId]);
    }
    if (slot.lifetime === 'session') {
      t.sessions = adjust(t.sessions, slot.member, 1);
      this.globalSessions = adjust(this.globalSessions, slot.member, 1);
      if (slot.expectedDurationMs !== null)
        t.sessionEnds.set(slot.runId, slot.admittedAt + slot.expectedDurationMs, 0);
    } else {
      t.queuedByClass[slot.class]++;
      this.queue.enqueue({
        id: slot.runId,
        tenant: slot.tenant,
        class: slot.class,
        enqueuedAt: slot.admittedAt,
      });
    }
    t.decisions.set(decision.requestId, decision);
    return { status: 'committed', decision };
  }

  async claim(capacity: number, now: number): Promise<Dispatch[]> {
    const out: Dispatch[] = [];
    while (out.length < capacity) {
      const item = this.queue.next(now);
      if (!item) break;
      const t = this.tenants.get(item.tenant)!;
      const slot = t.runs.get(item.id)!;
      slot.status = 'running';
      slot.startedAt = now;
      t.queuedByClass[slot.class]--;
      t.running++;
      if (slot.expectedDurationMs !== null) t.runningEnds.set(slot.runId, now + slot.expectedDurationMs, 0);
      if (t.running >= t.policy.maxConcurrent) this.queue.setBlocked(item.tenant, true);
      out.push({
        runId: slot.runId,
        tenant: slot.tenant,
        class: slot.class,
        enqueuedAt: item.enqueuedAt,
        waitedMs: now - item.enqueuedAt,
      });
    }
    return out;
  }

  async settle(s: Settlement): Promise<SettleResult> {
    const t = this.tenants.get(s.tenant);
    const slot = t?.runs.get(s.runId);
    if (!t || !slot) return { settled: false, reason: 'unknown_run' };
    if (isTerminalStatus(slot.status)) return { settled: false, reason: 'already_settled' };
    if (s.ifStatus !== undefined && slot.status !== s.ifStatus)
      return { settled: false, reason: 'status_changed' };
    if (slot.status === 'queued' && s.status === 'succeeded')
      return { settled: false, reason: 'not_started' };
    const from = slot.status;
    if (from === 'queued') {
      this.queue.remove(s.tenant, s.runId);
      t.queuedByClass[slot.class]--;
    } else if (slot.lifetime === 'session') {
      t.sessions = adjust(t.sessions, slot.member, -1);
      this.globalSessions = adjust(this.globalSessions, slot.member, -1);
      t.sessionEnds.delete(s.runId);
    } else {
      t.running--;
      t.runningEnds.delete(s.runId);
      if (t.running < t.policy.maxConcurrent) this.queue.setBlocked(s.tenant, false);
    }
    for (const env of settleOnPath(envelopePath(t, slot.envelopeId), s.actuals)) t.envelopes.set(env.id, env);
    slot.status = s.status;
    return { settled: true, from, slot }; // its status never changes again
  }

  async getRun(tenant: string, runId: string): Promise<RunSlot | null> {
    const slot = this.tenants.get(tenant)?.runs.get(runId);
    return slot ? { ...slot } : null;
  }

  async getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null> {
    return this.tenants.get(tenant)?.envelopes.get(envelopeId) ?? null;
  }

  async causalSubtree(tenant: string, runId: string): Promise<CausalNode[]> {
    const t = this.tenants.get(tenant);
    const out: CausalNode[] = [];
    const stack = [runId];
    while (t && stack.length > 0) {
      const id = stack.pop()!;
      const slot = t.runs.get(id);
      if (!slot) continue;
      out.push({
        runId: id,
        causedByRunId: slot.causedByRunId,
        status: slot.status,
        cause: slot.cause,
        kind: slot.kind,
      });
      stack.push(...(t.children.get(id) ?? []));
    }
    return out;
  }
}
