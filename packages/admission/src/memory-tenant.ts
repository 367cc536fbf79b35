// Per-tenant state of the memory store: its rows (runs, envelopes, decisions) and the counters a SQL
// store would derive with indexed counts and min() over its runs table. Keyed per tenant, so every
// lookup is tenant-scoped by construction.
import type { RunClass } from '@everdict/run-model';
import type { Admitted } from './decision.js';
import type { Envelope } from './envelope.js';
import { IndexedHeap } from './heap.js';
import type { TenantPolicy } from './policy.js';
import type { SessionLoad } from './session-pool.js';
import type { RunSlot } from './store.js';

export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export interface TenantState {
  policy: TenantPolicy;
  readonly runs: Map<string, Mutable<RunSlot>>;
  /** causer runId → the runs it caused. */
  readonly children: Map<string, string[]>;
  readonly envelopes: Map<string, Envelope>;
  /** requestId → the first admission. */
  readonly decisions: Map<string, Admitted>;
  readonly disabledAgents: Set<string>;
  running: number;
  readonly queuedByClass: Record<RunClass, number>;
  sessions: SessionLoad;
  /** Expected end of each running task run that gave a duration (for retry hints). */
  readonly runningEnds: IndexedHeap<string>;
  /** Expiry of each open session that gave a TTL. */
  readonly sessionEnds: IndexedHeap<string>;
}

export function newTenantState(policy: TenantPolicy): TenantState {
  return {
    policy,
    runs: new Map(),
    children: new Map(),
    envelopes: new Map(),
    decisions: new Map(),
    disabledAgents: new Set(),
    running: 0,
    queuedByClass: { interactive: 0, background: 0, batch: 0 },
    sessions: { total: 0, member: 0 },
    runningEnds: new IndexedHeap<string>(),
    sessionEnds: new IndexedHeap<string>(),
  };
}

export function queuedTotal(t: TenantState): number {
  return t.queuedByClass.interactive + t.queuedByClass.background + t.queuedByClass.batch;
}

/** Envelopes from `id` up to the tenant root. */
export function envelopePath(t: TenantState, id: string): Envelope[] {
  const path: Envelope[] = [];
  for (let env = t.envelopes.get(id); env; ) {
    path.push(env);
    env = env.parentId === null ? undefined : t.envelopes.get(env.parentId);
  }
  return path;
}
