// How the core is started. The HTTP layer's config.ts maps env vars onto this.

export type Clock = () => Date;
/** `ids('run')` → `run_<sortable unique>`. */
export type IdGen = (prefix: string) => string;

export interface TenantPolicy {
  /** Queued runs per tenant (429 `tenant.queue_depth` beyond). */
  maxQueued: number;
  /** Runs dispatched at once per tenant (the dispatch loop holds the rest queued). */
  maxInFlight: number;
  /** Children a single run may cause (429 `fanout.children`). */
  maxChildren: number;
  /** Causal depth limit (429 `causal.depth`). */
  maxDepth: number;
  /** The tenant's root envelope (402 `envelope.usd` once spent); null = unlimited. */
  budgetUsd: number | null;
}

export const DEFAULT_POLICY: TenantPolicy = {
  maxQueued: 10_000,
  maxInFlight: 64,
  maxChildren: 1_000,
  maxDepth: 8,
  budgetUsd: null,
};

export interface SchedulerOptions {
  /** Run the dispatch loop, inline executor, subscriptions consumer and schedule ticker. Default true. */
  enabled?: boolean;
  /** Poll fallback when no NOTIFY arrives. Default 1000 ms. */
  pollMs?: number;
  /** Max inline runs executing at once in this replica. Default 8. */
  inlineConcurrency?: number;
  /** Inline analysis timeout. Default 30 s. */
  inlineTimeoutMs?: number;
  /** Names this replica in logs and lease columns. */
  replicaId?: string;
}

export interface CoreOptions {
  /** An already open (migrated) ledger database; the core closes it on close(). Tests use this. */
  database?: import('../db/database.js').LedgerDatabase;
  /** PostgreSQL server; absent → PGlite. */
  databaseUrl?: string;
  /** PGlite data directory; absent (with no databaseUrl) → in-memory PGlite. */
  dataDir?: string;
  /** First start: creates tenant `default` with this admin key (idempotent on later starts). */
  bootstrapKey?: string;
  clock?: Clock;
  ids?: IdGen;
  policy?: Partial<TenantPolicy>;
  scheduler?: SchedulerOptions;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}
