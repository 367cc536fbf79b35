// Per-tenant state of the memory store: its rows (runs, envelopes, decisions) and the counters a SQL
// store would derive with indexed counts and min() over its runs table. Keyed per tenant, so every
// lookup is tenant-scoped by construction. Layout for a million queued runs: one record per run — the
// slot and its queue node in one object, plus the decision it was answered with — reached from the runs
// and decisions maps and its lane's FIFO; envelopes are
// nodes with parent pointers, so walking a path to the root needs no lookups.
import type { RunCause, RunClass, RunKind, RunLifetime, RunStatus } from '@everdict/run-model';
import type { Admitted } from './decision.js';
import type { Envelope } from './envelope.js';
import { LANE } from './fair-queue.js';
import { IndexedHeap } from './heap.js';
import type { TenantPolicy } from './policy.js';
import type { SessionLoad } from './session-pool.js';
import type { AdmissionPlan, RunSlot } from './store.js';
import type { WfqNode, WfqTenant } from './wfq.js';

/** An envelope row: its current (immutable) value, replaced on every write, and its parent. */
export interface EnvNode {
  env: Envelope;
  readonly parent: EnvNode | null;
}

export class TenantState {
  readonly runs = new Map<string, RunRecord>();
  /** requestId → the run it admitted (its first admission). */
  readonly decisions = new Map<string, RunRecord>();
  /** causer runId → the runs it caused. */
  readonly children = new Map<string, string[]>();
  readonly envelopes = new Map<string, EnvNode>();
  readonly disabledAgents = new Set<string>();
  running = 0;
  interactive = 0;
  background = 0;
  batch = 0;
  sessions: SessionLoad = { total: 0, member: 0 };
  /** Expected end of each running task run that gave a duration (for retry hints). */
  readonly runningEnds = new IndexedHeap<string>();
  /** Expiry of each open session that gave a TTL. */
  readonly sessionEnds = new IndexedHeap<string>();

  constructor(
    public policy: TenantPolicy,
    readonly root: EnvNode,
    public queue: WfqTenant<RunRecord>,
  ) {
    this.envelopes.set(root.env.id, root);
  }

  get queued(): number {
    return this.interactive + this.background + this.batch;
  }

  countQueued(runClass: RunClass, delta: 1 | -1): void {
    if (runClass === 'interactive') this.interactive += delta;
    else if (runClass === 'background') this.background += delta;
    else this.batch += delta;
  }
}

/** The slot fields an admitted decision repeats (same names, same values for plans `decide` made). */
type Shared = Pick<RunSlot, 'runId' | 'tenant' | 'class' | 'envelopeId' | 'depth' | 'admittedAt'>;

/** Does the decision say exactly what the slot does (always, for plans `decide` made)? */
function repeats(d: Admitted, s: RunSlot): boolean {
  return (
    d.runId === s.runId &&
    d.tenant === s.tenant &&
    d.class === s.class &&
    d.envelopeId === s.envelopeId &&
    d.depth === s.depth &&
    d.admittedAt === s.admittedAt
  );
}

/**
 * One admitted run: its slot, its decision and its queue node. The fields its decision repeats are read
 * through it (or through the plan's slot for a hand-made plan that disagrees), not stored twice.
 */
export class RunRecord implements WfqNode {
  /** Its first admission, the very object answered (a repeat of the request returns it again). */
  readonly decision: Admitted;
  private readonly shared: Shared;
  readonly kind: RunKind;
  readonly cause: RunCause;
  readonly lifetime: RunLifetime;
  status: RunStatus;
  readonly causedByRunId: string | null;
  children: number;
  readonly member: boolean;
  readonly agentId: string | null;
  readonly expectedDurationMs: number | null;
  startedAt: number | null;
  readonly lane: number;
  finish = 0;
  seq = 0;
  removed = false;

  constructor(
    plan: AdmissionPlan,
    readonly owner: TenantState,
    /** The envelope it draws from (null only for a hand-made plan naming an unknown one). */
    readonly env: EnvNode | null,
  ) {
    const s = plan.slot;
    this.decision = plan.decision;
    this.shared = repeats(plan.decision, s) ? plan.decision : s;
    this.kind = s.kind;
    this.cause = s.cause;
    this.lifetime = s.lifetime;
    this.status = s.status;
    this.causedByRunId = s.causedByRunId;
    this.children = s.children;
    this.member = s.member;
    this.agentId = s.agentId;
    this.expectedDurationMs = s.expectedDurationMs;
    this.startedAt = s.startedAt;
    this.lane = LANE[s.class];
  }

  get runId(): string {
    return this.shared.runId;
  }
  get tenant(): string {
    return this.shared.tenant;
  }
  get class(): RunClass {
    return this.shared.class;
  }
  get envelopeId(): string {
    return this.shared.envelopeId;
  }
  get depth(): number {
    return this.shared.depth;
  }
  get admittedAt(): number {
    return this.shared.admittedAt;
  }
  get enqueuedAt(): number {
    return this.shared.admittedAt;
  }
}

/** The slot as the store interface returns it: a copy, never the live record. */
export function slotOf(r: RunRecord): RunSlot {
  return {
    runId: r.runId,
    tenant: r.tenant,
    kind: r.kind,
    cause: r.cause,
    class: r.class,
    lifetime: r.lifetime,
    status: r.status,
    causedByRunId: r.causedByRunId,
    depth: r.depth,
    children: r.children,
    envelopeId: r.envelopeId,
    member: r.member,
    agentId: r.agentId,
    expectedDurationMs: r.expectedDurationMs,
    admittedAt: r.admittedAt,
    startedAt: r.startedAt,
  };
}

/** Envelopes from `node` up to the tenant root. */
export function pathOf(node: EnvNode | null): Envelope[] {
  const path: Envelope[] = [];
  for (let n = node; n; n = n.parent) path.push(n.env);
  return path;
}
