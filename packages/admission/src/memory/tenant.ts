// Per-tenant state of the memory store: its rows' indexes (decisions, envelopes) and the counters a SQL
// store would derive with indexed counts and min() over its runs table. Keyed per tenant, so every lookup
// is tenant-scoped by construction (the run index too: its key is the tenant's number + the run id). Layout for a million queued runs: the runs themselves are rows
// of the store's `RunTable` (typed arrays); run ids map to rows in the store's `RunIndex` (one typed-array
// hash table keyed by tenant number + run id); a tenant keeps a map entry only for a request id that
// differs from its run id. Envelopes are nodes with parent pointers, so walking a path to the root needs
// no lookups.
import type { RunClass } from '@everdict/run-model';
import { type Envelope, exhaustedResource } from '../envelope.js';
import { IndexedHeap } from '../heap.js';
import type { TenantPolicy } from '../policy.js';
import type { SessionLoad } from '../session-pool.js';
import type { AdmissionPlan, TenantLoad } from '../store.js';
import type { WfqTenant } from '../wfq.js';
import type { RunTable } from './run-table.js';

/** An envelope row: its current (immutable) value, replaced on every write, and its parent. */
export interface EnvNode {
  env: Envelope;
  readonly parent: EnvNode | null;
}

/** The load of a tenant the store does not know. */
export const NO_LOAD: TenantLoad = {
  queued: 0,
  queuedByClass: { interactive: 0, background: 0, batch: 0 },
  running: 0,
  sessions: { total: 0, member: 0 },
  earliestRunningEnd: null,
  earliestSessionEnd: null,
};

export class TenantState {
  /** requestId → the row it admitted, for requests whose id is not their run's id (else `ownRequest`). */
  readonly decisions = new Map<string, number>();
  /** causer row → the rows it caused. */
  readonly children = new Map<number, number[]>();
  readonly envelopes = new Map<string, EnvNode>();
  readonly disabledAgents = new Set<string>();
  running = 0;
  interactive = 0;
  background = 0;
  batch = 0;
  sessions: SessionLoad = { total: 0, member: 0 };
  /** Expected end of each running task run (by row) that gave a duration (for retry hints). */
  readonly runningEnds = new IndexedHeap<number>();
  /** Expiry of each open session (by row) that gave a TTL. */
  readonly sessionEnds = new IndexedHeap<number>();

  constructor(
    /** Its number in the run table's tenant column. */
    readonly no: number,
    readonly id: string,
    public policy: TenantPolicy,
    readonly root: EnvNode,
    public queue: WfqTenant,
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

  /** The row `requestId` admitted, or -1 (`own`: the row whose run id is `requestId`, or -1). */
  prior(table: RunTable, requestId: string, own: number): number {
    const r = this.decisions.size === 0 ? undefined : this.decisions.get(requestId);
    if (r !== undefined) return r;
    return own >= 0 && table.ownRequest[own] === 1 ? own : -1;
  }
}

/** Envelopes from `node` up to the tenant root. */
export function pathOf(node: EnvNode | null): Envelope[] {
  const path: Envelope[] = [];
  for (let n = node; n; n = n.parent) path.push(n.env);
  return path;
}

/** Does any envelope of the path block the estimate? */
export function pathBlocks(path: readonly EnvNode[], estimate: AdmissionPlan['guards']['estimate']): boolean {
  for (const node of path) if (blocks(node.env, estimate)) return true;
  return false;
}

/** The envelope has no balance for the estimate, or is at its in-flight cap: a guard no longer holds. */
export function blocks(env: Envelope, estimate: AdmissionPlan['guards']['estimate']): boolean {
  return exhaustedResource(env, estimate) !== null || env.inFlight >= env.inFlightCap;
}
