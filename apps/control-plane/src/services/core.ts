// Composition root of the ledger + application layer: open the database, bootstrap, services, scheduler.
import { type LedgerDatabase, openDatabase } from '../db/database.js';
import { QueueStats } from '../db/queue-stats.js';
import { DispatchLoop } from '../scheduler/dispatch-loop.js';
import { TriggerLoop } from '../scheduler/trigger-loop.js';
import { TrajectoryJobs } from '../trajectory/jobs.js';
import { RunTrajectories } from '../trajectory/run-trajectories.js';
import { TrajectoryService } from '../trajectory/service.js';
import { agentBridgeService } from './agent-bridge.js';
import type { ControlPlaneServices } from './api.js';
import { authService } from './auth.js';
import { type BootstrapOutcome, bootstrapTenant } from './bootstrap.js';
import { type Deps, defaultIds } from './context.js';
import { eventFeed } from './events-feed.js';
import { groupService } from './groups.js';
import { type CoreOptions, DEFAULT_POLICY, NO_OBSERVER } from './options.js';
import { type QueueDepthRow, queueDepth } from './queue-depth.js';
import { runService } from './runs.js';
import { withStorableGuard } from './storable-guard.js';
import { subscriptionService } from './subscriptions.js';

export interface Core {
  services: ControlPlaneServices;
  dialect: 'postgres' | 'pglite';
  /** What this start did to tenant `default` (null when neither a key nor a generator was given). */
  bootstrap: BootstrapOutcome | null;
  /** Liveness of the ledger database. */
  health(): Promise<{ ok: boolean; dialect: 'postgres' | 'pglite' }>;
  /** Queued runs per tenant and class, read from the ledger (every replica agrees). For /metrics. */
  queueDepth(): Promise<QueueDepthRow[]>;
  /** Runs' trajectories (append/read/tail/seal), or null when no trajectory store was given. */
  trajectories: RunTrajectories | null;
  /** Trajectories per principal (the HTTP routes), or null without a store. */
  trajectoryService: TrajectoryService | null;
  /** The trajectory background jobs (seal queue, retention), or null without a store. */
  trajectoryJobs: TrajectoryJobs | null;
  /** Stops the scheduler loops (gracefully) and closes the database. */
  close(): Promise<void>;
  /** The ledger's internals, for tests and tooling (not for the HTTP layer). */
  internals: { deps: Deps; ldb: LedgerDatabase; dispatch: DispatchLoop | null; triggers: TriggerLoop | null };
}

export async function startCore(options: CoreOptions = {}): Promise<Core> {
  const ldb =
    options.database ?? (await openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir }));
  const clock = options.clock ?? (() => new Date());
  const deps: Deps = {
    ldb,
    db: ldb.db,
    clock,
    ids: options.ids ?? defaultIds(clock),
    log: options.log ?? (() => undefined),
    observe: options.metrics ?? NO_OBSERVER,
    queueStats: new QueueStats(ldb.db, (e) =>
      options.log?.('warn', 'queue statistics refresh failed', { error: String(e) }),
    ),
  };
  const policy = { ...DEFAULT_POLICY, ...options.policy };
  let bootstrap: BootstrapOutcome | null;
  try {
    bootstrap = await bootstrapTenant(deps, policy, options);
  } catch (e) {
    await ldb.close();
    throw e;
  }
  const services: ControlPlaneServices = withStorableGuard({
    auth: authService(deps, policy),
    runs: runService(deps),
    events: eventFeed(deps, options.scheduler?.pollMs ?? 1000),
    groups: groupService(deps, options.judge),
    subscriptions: subscriptionService(deps),
    agentBridge: agentBridgeService(deps),
  });
  const trajectories = options.trajectories ? new RunTrajectories(options.trajectories, ldb) : null;
  const trajectoryJobs = trajectories
    ? new TrajectoryJobs(deps, trajectories, options.trajectoryJobs ?? {})
    : null;
  const trajectoryService = trajectories ? new TrajectoryService(deps, trajectories, options.judge) : null;
  const sched = options.scheduler ?? {};
  let dispatch: DispatchLoop | null = null;
  let triggers: TriggerLoop | null = null;
  if (sched.enabled !== false) {
    dispatch = new DispatchLoop(deps, {
      pollMs: sched.pollMs ?? 1000,
      concurrency: sched.inlineConcurrency ?? 8,
      timeoutMs: sched.inlineTimeoutMs ?? 30_000,
      ...(sched.inlineReapAfterMs === undefined ? {} : { reapAfterMs: sched.inlineReapAfterMs }),
    });
    triggers = new TriggerLoop(deps, sched.pollMs ?? 1000);
    await dispatch.start();
    await triggers.start();
  }
  if (trajectoryJobs && sched.enabled !== false) trajectoryJobs.start();
  return {
    services,
    dialect: ldb.dialect,
    bootstrap,
    trajectories,
    trajectoryJobs,
    trajectoryService,
    async health() {
      try {
        await deps.db.selectFrom('tenants').select('id').limit(1).execute();
        return { ok: true, dialect: ldb.dialect };
      } catch {
        return { ok: false, dialect: ldb.dialect };
      }
    },
    queueDepth: () => queueDepth(deps.db),
    async close() {
      await dispatch?.stop();
      await triggers?.stop();
      await trajectoryJobs?.stop();
      await deps.queueStats.settled();
      await options.trajectories?.close();
      await ldb.close();
    },
    internals: { deps, ldb, dispatch, triggers },
  };
}
