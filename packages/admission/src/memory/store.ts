// The in-memory AdmissionStore: every step is synchronous, so each is atomic on the one JS thread — the
// same unit a SQL store gets from one transaction. For tests, demos and one process. One folder with the
// same file roles as every store (as Kysely's dialects): state.ts (its "tables"), load.ts, commit.ts,
// claim.ts, settle.ts, and this store.ts composing them; the control plane's SQL store
// (apps/control-plane/src/admission-store/sql/) has the same roles. The async methods are the
// `AdmissionStore` interface; the `…Sync` twins (`SyncAdmissionSteps`) are the same steps without a
// promise, which the gate uses when it sees them.
import type { CausalNode } from '../cascade.js';
import { type Envelope, rootEnvelope } from '../envelope.js';
import type { GlobalPolicy, TenantPolicy } from '../policy.js';
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
} from '../store.js';
import { assertWeight, Wfq } from '../wfq.js';
import { claim } from './claim.js';
import { commitAdmission } from './commit.js';
import { loadAdmission } from './load.js';
import { settle } from './settle.js';
import { type MemoryState, memoryState } from './state.js';
import { TenantState } from './tenant.js';

export class MemoryAdmissionStore implements AdmissionStore, SyncAdmissionSteps {
  private readonly m: MemoryState;

  constructor(global?: GlobalPolicy) {
    this.m = memoryState(global);
  }

  async putTenant(tenant: string, policy: TenantPolicy): Promise<void> {
    assertWeight(policy.weight); // before any write: a refused policy changes nothing
    let t = this.m.tenants.get(tenant);
    if (!t) {
      const root = { env: rootEnvelope(tenant, policy.budget, policy.inFlightCap), parent: null };
      t = new TenantState(this.m.tenants.size, tenant, policy, root, this.m.queue.tenant());
      this.m.tenants.set(tenant, t);
      this.m.byNo.push(t);
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
    this.m.queue.setWeight(t.queue, policy.weight);
    this.m.queue.setBlocked(t.queue, t.running >= policy.maxConcurrent);
  }

  async putGlobal(policy: GlobalPolicy): Promise<void> {
    if (policy.agingMs !== this.m.global.agingMs) {
      if (this.m.queue.size > 0)
        throw new RangeError('agingMs cannot change while runs are queued in the memory store');
      this.m.queue = new Wfq(policy.agingMs, this.m.table);
      for (const t of this.m.tenants.values()) {
        t.queue = this.m.queue.tenant();
        this.m.queue.setWeight(t.queue, t.policy.weight);
        this.m.queue.setBlocked(t.queue, t.running >= t.policy.maxConcurrent);
      }
    }
    this.m.global = policy;
  }

  async setAgentEnabled(tenant: string, agentId: string, enabled: boolean): Promise<void> {
    const t = this.m.tenants.get(tenant);
    if (!t) return;
    if (enabled) t.disabledAgents.delete(agentId);
    else t.disabledAgents.add(agentId);
  }

  async loadAdmission(key: AdmissionKey): Promise<AdmissionSnapshot> {
    return loadAdmission(this.m, key);
  }

  loadAdmissionSync(key: AdmissionKey): AdmissionSnapshot {
    return loadAdmission(this.m, key);
  }

  async commitAdmission(plan: AdmissionPlan): Promise<CommitResult> {
    return commitAdmission(this.m, plan);
  }

  commitAdmissionSync(plan: AdmissionPlan): CommitResult {
    return commitAdmission(this.m, plan);
  }

  async claim(capacity: number, now: number): Promise<Dispatch[]> {
    return claim(this.m, capacity, now);
  }

  claimSync(capacity: number, now: number): Dispatch[] {
    return claim(this.m, capacity, now);
  }

  async settle(s: Settlement): Promise<SettleResult> {
    return settle(this.m, s);
  }

  settleSync(s: Settlement): SettleResult {
    return settle(this.m, s);
  }

  async getRun(tenant: string, runId: string): Promise<RunSlot | null> {
    const t = this.m.tenants.get(tenant);
    const r = t ? this.m.ids.get(t.no, runId) : -1;
    return r < 0 ? null : this.m.table.slot(r);
  }

  async getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null> {
    return this.m.tenants.get(tenant)?.envelopes.get(envelopeId)?.env ?? null;
  }

  async causalSubtree(tenant: string, runId: string): Promise<CausalNode[]> {
    const t = this.m.tenants.get(tenant);
    const r = t ? this.m.ids.get(t.no, runId) : -1;
    if (!t || r < 0) return [];
    const table = this.m.table;
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
