// The state the gate needs, behind one interface. Every method is ONE atomic step — a single SQL statement
// or one transaction — so a PostgreSQL store can implement it with conditional UPDATEs
// (`… WHERE in_flight < in_flight_cap`) and `FOR UPDATE SKIP LOCKED` claims. Kernels decide; stores apply.
// Every method is tenant-scoped except the global claim and global policy.
import {
  isTerminalStatus,
  type RunCause,
  type RunClass,
  type RunKind,
  type RunLifetime,
  type RunStatus,
  type TerminalStatus,
} from '@everdict/run-model';
import type { CausalNode } from './cascade.js';
import type { Admitted } from './decision.js';
import type { Actuals, Envelope } from './envelope.js';
import type { GlobalPolicy, TenantPolicy } from './policy.js';
import type { PoolCaps, SessionLoad } from './session-pool.js';

/** The gate's record of one admitted run — admission bookkeeping, not the run itself. */
export interface RunSlot {
  readonly runId: string;
  readonly tenant: string;
  readonly kind: RunKind;
  readonly cause: RunCause;
  readonly class: RunClass;
  readonly lifetime: RunLifetime;
  readonly status: RunStatus;
  readonly causedByRunId: string | null;
  readonly depth: number;
  /** Runs this run has caused so far (the fan-out guard counts a run's whole life). */
  readonly children: number;
  /** The envelope it draws from; runs it causes draw from this one too. */
  readonly envelopeId: string;
  /** A member-opened session (holds a reserved slot). */
  readonly member: boolean;
  readonly agentId: string | null;
  readonly expectedDurationMs: number | null;
  readonly admittedAt: number;
  /** When it started running (sessions: at admission). */
  readonly startedAt: number | null;
}

export interface AdmissionKey {
  readonly tenant: string;
  readonly requestId: string;
  readonly causedByRunId?: string | undefined;
  readonly agentId?: string | undefined;
  readonly sliceId?: string | undefined;
}

export interface TenantLoad {
  readonly queued: number;
  readonly queuedByClass: Readonly<Record<RunClass, number>>;
  /** Running task runs (the concurrency quota's count). */
  readonly running: number;
  readonly sessions: SessionLoad;
  /** Earliest startedAt + expectedDurationMs over running task runs that gave one. */
  readonly earliestRunningEnd: number | null;
  /** Earliest expiry over open sessions that gave a TTL. */
  readonly earliestSessionEnd: number | null;
}

/** One consistent read of everything `decide` needs. */
export interface AdmissionSnapshot {
  /** The admission already recorded for (tenant, requestId), if any. */
  readonly prior: Admitted | null;
  /** null: the tenant is not configured. */
  readonly policy: TenantPolicy | null;
  readonly global: GlobalPolicy;
  /** The causer when key.causedByRunId was given and found in this tenant; else null. */
  readonly causer: RunSlot | null;
  /**
   * The causer's causal ancestors, its own causer first, up to its tree's root (empty without a causer):
   * with `causer`, what the `causer_cancelled` rule walks (`revokedBy`).
   */
  readonly ancestors: readonly CausalNode[];
  /** The envelope to draw from (causer's, else the tenant root) up to the root; empty if unknown tenant. */
  readonly path: readonly Envelope[];
  readonly sliceTaken: boolean;
  readonly agentDisabled: boolean;
  readonly load: TenantLoad;
  readonly globalSessions: SessionLoad;
}

/** What a commit must re-check atomically: the rules' caps as of the decision. */
export interface AdmissionGuards {
  readonly estimate: Actuals;
  /** Task runs: the tenant's queued count must stay below this. */
  readonly maxQueued: number | null;
  /** Session runs: both pools must have room for this kind of session. */
  readonly sessionPools: { readonly tenant: PoolCaps; readonly global: PoolCaps } | null;
  /** Caused runs: the causer's children must stay below this. */
  readonly maxChildren: number | null;
}

export interface AdmissionPlan {
  readonly decision: Admitted;
  /** The new run's slot (status `queued` for tasks, `running` for sessions). */
  readonly slot: RunSlot;
  /** Existing envelopes to draw on, drawn-from first, root last. */
  readonly pathIds: readonly string[];
  /** A delegated slice to create under pathIds[0]; the run then draws from it. */
  readonly slice: Envelope | null;
  readonly guards: AdmissionGuards;
}

export type CommitResult =
  | { readonly status: 'committed'; readonly decision: Admitted }
  /** (tenant, requestId) was already admitted: its first decision, nothing charged again. */
  | { readonly status: 'duplicate'; readonly decision: Admitted }
  /** A guard no longer holds (a concurrent writer got there first): reload and decide again. */
  | { readonly status: 'raced' }
  | { readonly status: 'run_exists' }
  | { readonly status: 'slice_exists' };

/** A queued run claimed for dispatch: now `running`. */
export interface Dispatch {
  readonly runId: string;
  readonly tenant: string;
  readonly class: RunClass;
  readonly enqueuedAt: number;
  readonly waitedMs: number;
}

export interface Settlement {
  readonly tenant: string;
  readonly runId: string;
  readonly status: TerminalStatus;
  readonly actuals: Actuals;
  readonly now: number;
  /** Settle only if the run is still in this status (e.g. cancel a queued run unless it was claimed). */
  readonly ifStatus?: RunStatus;
}

export type SettleRefusal = 'already_settled' | 'status_changed' | 'not_started';

/** The one settle rule, every store's: why a run in status `from` may not settle as `s` asks (null: it may). */
export function settleRefusal(
  from: RunStatus,
  s: Pick<Settlement, 'status' | 'ifStatus'>,
): SettleRefusal | null {
  if (isTerminalStatus(from)) return 'already_settled';
  if (s.ifStatus !== undefined && from !== s.ifStatus) return 'status_changed';
  if (from === 'queued' && s.status === 'succeeded') return 'not_started';
  return null;
}

export type SettleResult =
  | { readonly settled: true; readonly from: RunStatus; readonly slot: RunSlot }
  | {
      readonly settled: false;
      readonly reason: 'unknown_run' | SettleRefusal;
    };

export interface AdmissionStore {
  /** Upsert a tenant's policy and its root envelope's caps (spent is kept: raising caps tops up). */
  putTenant(tenant: string, policy: TenantPolicy): Promise<void>;
  putGlobal(policy: GlobalPolicy): Promise<void>;
  /** Disabling stops future activations of the agent; nothing admitted is touched. */
  setAgentEnabled(tenant: string, agentId: string, enabled: boolean): Promise<void>;

  /** One consistent read (a read-only transaction). */
  loadAdmission(key: AdmissionKey): Promise<AdmissionSnapshot>;
  /**
   * One transaction: record the decision keyed by (tenant, requestId) unless one exists; re-check every
   * guard; count the run in-flight (and runs +1) on every envelope of the path (creating the slice
   * first); bump the causer's children; insert the slot; enqueue a task / open a session.
   */
  commitAdmission(plan: AdmissionPlan): Promise<CommitResult>;

  /**
   * One transaction: claim up to `capacity` queued runs in fair-queue order (tenants with a run past
   * the aging bound first — by weight across tenants, oldest run first within one; then interactive >
   * background > batch, least virtual finish tag first), skipping tenants at their concurrency quota;
   * mark them running.
   */
  claim(capacity: number, now: number): Promise<Dispatch[]>;
  /**
   * One transaction: a non-terminal run becomes terminal (a queued run may be cancelled or fail — it
   * could not be placed — but not succeed: `not_started`); its queue entry, running slot or session slot
   * is freed; actuals are charged and in-flight released on every envelope up to the root.
   */
  settle(settlement: Settlement): Promise<SettleResult>;

  getRun(tenant: string, runId: string): Promise<RunSlot | null>;
  getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null>;
  /** The run and every run it caused, transitively (a recursive CTE in SQL). */
  causalSubtree(tenant: string, runId: string): Promise<CausalNode[]>;
}

/**
 * Optional: a store whose steps all complete synchronously (the memory store) may expose them as plain
 * calls as well. Same semantics, one atomic step each; `admit`, `admitTrusted`, `dequeue` and `release`
 * use them when present, which saves a promise and a microtask hop per step. A SQL store has no reason
 * to implement this. A subclass that overrides an async step must override its `…Sync` twin too.
 */
export interface SyncAdmissionSteps {
  loadAdmissionSync(key: AdmissionKey): AdmissionSnapshot;
  commitAdmissionSync(plan: AdmissionPlan): CommitResult;
  claimSync(capacity: number, now: number): Dispatch[];
  settleSync(settlement: Settlement): SettleResult;
}

export function hasSyncSteps(store: AdmissionStore): store is AdmissionStore & SyncAdmissionSteps {
  const s = store as AdmissionStore & Partial<SyncAdmissionSteps>;
  return (
    typeof s.loadAdmissionSync === 'function' &&
    typeof s.commitAdmissionSync === 'function' &&
    typeof s.claimSync === 'function' &&
    typeof s.settleSync === 'function'
  );
}
