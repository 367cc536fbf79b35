// How the core is started. The HTTP layer's config.ts maps env vars onto this.

import type { TenantPolicyInput } from '@everdict/admission';

export type Clock = () => Date;
/** `ids('run')` → `run_<sortable unique>`. */
export type IdGen = (prefix: string) => string;

/**
 * The deployment's default for the tenants it creates, as admission's one tenant-policy type
 * (`@everdict/admission` `TenantPolicyInput`: its schema, names and other defaults are admission's). The
 * deployment differs from admission's defaults in one rule only: a run may cause up to 1,000 runs.
 */
export const DEFAULT_POLICY = { maxChildrenPerRun: 1_000 } as const satisfies TenantPolicyInput;

export interface SchedulerOptions {
  /** Run the dispatch loop, inline executor, subscriptions consumer and schedule ticker. Default true. */
  enabled?: boolean;
  /** Poll fallback when no NOTIFY arrives. Default 1000 ms. */
  pollMs?: number;
  /**
   * The poll fallback while this process is alone on its database (db/fallback-poll.ts; EVERDICT_ALONE_POLL_MS):
   * the dispatch loop's, the runner and agent-host lease long-polls', the session relay's and the head log's.
   * Default 5 × pollMs.
   */
  alonePollMs?: number;
  /** Max inline runs executing at once in this replica. Default 8. */
  inlineConcurrency?: number;
  /** Inline analysis timeout. Default 30 s. */
  inlineTimeoutMs?: number;
  /** The lease rule (leases/): `leaseMs` (EVERDICT_LEASE_MS), `maxAttempts` (EVERDICT_MAX_ATTEMPTS), heartbeat, sweep. */
  lease?: import('../leases/policy.js').LeasePolicyInput;
  /** Names this replica in logs and lease columns. */
  replicaId?: string;
}

/** Outcome of one pass through the admission gate (refusals by HTTP status class). */
export type AdmissionOutcome = 'admitted' | 'refused_402' | 'refused_429' | 'refused_other';

/**
 * Hooks the core calls (metrics): every admission decision, from every source of runs (API, groups,
 * subscriptions, schedules, agent bridge), and every dispatch (seconds queued → started). The HTTP layer's
 * `Metrics.coreObserver()` satisfies this.
 */
export interface CoreObserver {
  admission(outcome: AdmissionOutcome, kind: string, rule?: string): void;
  dispatched(latencySeconds: number, runClass: string): void;
  /** What retention and the artifact sweep deleted in one pass (called only by a pass that deleted something). */
  deleted?(what: StoredKind, count: number): void;
}

/** What the background passes delete: sealed trajectories (retention), artifacts and staged uploads (the sweep). */
export type StoredKind = 'trajectory' | 'artifact' | 'upload';

export const NO_OBSERVER: CoreObserver = { admission: () => undefined, dispatched: () => undefined };

export interface CoreOptions {
  /** An already open (migrated) ledger database; the core closes it on close(). Tests use this. */
  database?: import('../db/database.js').LedgerDatabase;
  /** PostgreSQL server; absent → PGlite. */
  databaseUrl?: string;
  /** PGlite data directory; absent (with no databaseUrl) → in-memory PGlite. */
  dataDir?: string;
  /**
   * The control plane's Ed25519 signing key: `secretKey` (32 bytes) as is, or a `file` (64 hex chars, mode
   * 0600) created on first start and reused after. Absent → a fresh in-memory key (tests); the process entry
   * always passes `{ file: EVERDICT_SIGNING_KEY_FILE ?? <EVERDICT_DATA_DIR>/keys/control-plane.ed25519 }`.
   */
  signingKey?: { secretKey: Uint8Array } | { file: string };
  /**
   * Executors beyond the built-in ones (inline analysis, agent bridge), e.g. `declaredRunner(...)` for a
   * registered runner; more can be added later through `Core.executors.register`.
   */
  executors?: readonly import('../executors/registry.js').ExecutorLane[];
  /**
   * An explicit admin key of tenant `default` (EVERDICT_BOOTSTRAP_API_KEY): installed if its hash is not
   * stored yet, so the same key on every start adds no row. Tenant `default` is created if missing.
   */
  bootstrapKey?: string;
  /**
   * Without `bootstrapKey`: called only when tenant `default` has no active admin key (a first start), to
   * make the key to install; `Core.bootstrap.generatedKey` then carries it, to be shown once.
   */
  generateBootstrapKey?: () => string;
  /** Decides `judge` graders (model-based grading). Absent → such graders are a 400 judge_unavailable. */
  judge?: import('@everdict/run-model').Judge;
  clock?: Clock;
  ids?: IdGen;
  /** Every tenant's policy at creation, over DEFAULT_POLICY (admission's type; parsed by admission's schema). */
  policy?: TenantPolicyInput;
  scheduler?: SchedulerOptions;
  /** The create combiner: under load a create waits up to `batchMs` (default 0) for company. */
  create?: { batchMs?: number };
  /** Cascade cancellation: batch size (≤ 500) and a hook after each committed batch (tests). */
  cascade?: import('./cascade.js').CascadeOptions;
  /**
   * The agent service's side (src/agents/): EVERDICT_STORAGE_W_PER_GB for transcript parks (default: env,
   * else 0.0012); `requirePaired` (EVERDICT_AGENT_REQUIRE_PAIRED=1): only paired agent hosts hold turn leases.
   * A waiting turn long-poll looks again when woken (agents/turn-waiters.ts), at most every `recheckGapMs`
   * (default 200), and at least every `pollMs` (default: `scheduler.pollMs`, else 1,000) — every `alonePollMs`
   * (default: `scheduler.alonePollMs`, else 5 × pollMs) while this process is alone on its database.
   */
  agents?: {
    storageWattsPerGb?: number;
    requirePaired?: boolean;
    pollMs?: number;
    alonePollMs?: number;
    recheckGapMs?: number;
  };
  /**
   * The trajectory store (issue 12): runs' trajectories are appended, tailed and sealed through it
   * (`Core.trajectories`). Absent → no trajectory routes work (503) and nothing is sealed. The core closes it.
   */
  trajectories?: import('@everdict/trajectory-store').TrajectoryStore;
  /** The largest artifact a runner may upload, in bytes (EVERDICT_ARTIFACT_MAX_BYTES; default 5 GiB). */
  artifactMaxBytes?: number;
  /** Trajectory background work (the seal queue, retention). */
  trajectoryJobs?: import('../trajectory/jobs.js').TrajectoryJobOptions;
  /**
   * Sessions (src/sessions/): held-open sandbox runs on the embedded placement (`driver`, locally the process
   * driver). Absent → POST /sandboxes answers 404 and a session sandbox run goes to the runners' queue.
   */
  sessions?: import('../sessions/index.js').SessionOptions;
  /**
   * The cross-replica relay of runners' session channels (runners/sessions/relay.ts): its timings, or `false`
   * to turn it off. On by default on PostgreSQL; never on PGlite (one process holds every channel).
   */
  sessionRelay?: import('../runners/sessions/relay.js').RelayOptions | false;
  /** The head log (issue 18 §2): its key (file), witness keys, STH interval. Absent → no log is sequenced. */
  headLog?: import('../log/index.js').StartHeadLogOptions;
  /**
   * The vacuum keeper (db/vacuum-keeper.ts): vacuums the ledger's tables by autovacuum's rule where no
   * autovacuum runs (PGlite; PostgreSQL with `autovacuum = off`). Absent → none (the process entry passes
   * `{ checkMs: EVERDICT_VACUUM_CHECK_MS }` unless that is 0).
   */
  vacuum?: import('../db/vacuum-keeper.js').VacuumOptions;
  /** Admission / dispatch observer (metrics). */
  metrics?: CoreObserver;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}
