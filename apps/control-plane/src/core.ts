import { agentService } from './agents/service.js';
import { TurnWaiters } from './agents/turn-waiters.js';
import { KEYS_CHANNEL, KeyCache } from './auth/key-cache.js';
import { type LedgerDatabase, openDatabase } from './db/database.js';
import { fallbackPoll } from './db/fallback-poll.js';
import { QueueStats } from './db/queue-stats.js';
import { VacuumKeeper } from './db/vacuum-keeper.js';
import { AGENT_BRIDGE, ExecutorRegistry, INLINE_ANALYSIS } from './executors/registry.js';
import { KeyRing } from './keys/registry.js';
import { ephemeralSigner, loadOrCreateSecret, type Signer, signerOf } from './keys/signer.js';
import { leasePolicy } from './leases/policy.js';
import { EVENTS_CHANNEL } from './ledger/events.js';
import { type HeadLog, openHeadLog } from './log/index.js';
import { RUNNER_INDEX } from './runners/placement.js';
import { LeaseWaiters, runnerService } from './runners/service.js';
import { RunnerSessionHub } from './runners/sessions/hub.js';
import { DispatchLoop } from './scheduler/dispatch-loop.js';
import { TriggerLoop } from './scheduler/trigger-loop.js';
import { agentBridgeService } from './services/agent-bridge.js';
import type { ControlPlaneServices } from './services/api.js';
import { authService } from './services/auth.js';
import { type BootstrapOutcome, bootstrapTenant } from './services/bootstrap.js';
import { CascadeWorker } from './services/cascade.js';
import { type Deps, DISPATCH_CHANNEL, defaultIds } from './services/context.js';
import { eventFeed } from './services/events-feed.js';
import { groupService } from './services/groups.js';
import { type CoreOptions, DEFAULT_POLICY, NO_OBSERVER } from './services/options.js';
import { type QueueDepthRow, queueDepth } from './services/queue-depth.js';
import { cancelTree, runService } from './services/runs.js';
import { withStorableGuard } from './services/storable-guard.js';
import { subscriptionService } from './services/subscriptions.js';
import { EMBEDDED_SESSIONS, type Sessions, startSessions } from './sessions/index.js';
import { TrajectoryJobs } from './trajectory/jobs.js';
import { RunTrajectories } from './trajectory/run-trajectories.js';
import { TrajectoryService } from './trajectory/service.js';

export interface Core {
  services: ControlPlaneServices;
  dialect: 'postgres' | 'pglite';
  /** What this start did to tenant `default` (null when neither a key nor a generator was given). */
  bootstrap: BootstrapOutcome | null;
  /** Liveness of the ledger database. */
  /** Does the ledger answer within 3 s? `reason` says why not. */
  health(): Promise<{ ok: boolean; dialect: 'postgres' | 'pglite'; reason?: string }>;
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
  /** The public keys verifiers may trust (GET /keys): this control plane's own first. */
  keys: KeyRing;
  /** Held-open sandboxes (service, reaper), or null without an embedded placement. */
  sessions: Sessions | null;
  /** Runners' session channels (the node server's upgrade listener `hub.upgrade`), or null without sessions. */
  sessionHub: RunnerSessionHub | null;
  /** The executors every create door consults (register a runner's lane here). */
  executors: ExecutorRegistry;
  /** The head log (issue 18 §2), or null when not configured (`CoreOptions.headLog`). */
  headLog: HeadLog | null;
  /** The ledger's internals, for tests and tooling (not for the HTTP layer). */
  internals: {
    deps: Deps;
    ldb: LedgerDatabase;
    dispatch: DispatchLoop | null;
    triggers: TriggerLoop | null;
    /** The vacuum keeper (`CoreOptions.vacuum`), or null. */
    vacuum: VacuumKeeper | null;
    /** What wakes the agent hosts' waiting turn long-polls. */
    turnWaiters: TurnWaiters;
    /** What wakes the runners' waiting lease long-polls. */
    leaseWaiters: LeaseWaiters;
    /** Settles when the cascades left open by a previous process have been driven (resumed at start). */
    cascadesResumed: Promise<void>;
  };
}

function signerFor(options: CoreOptions): Signer {
  const k = options.signingKey;
  if (k && 'secretKey' in k) return signerOf(k.secretKey);
  return k ? signerOf(loadOrCreateSecret(k.file)) : ephemeralSigner();
}

export async function startCore(options: CoreOptions = {}): Promise<Core> {
  const signer = signerFor(options); // before the database: a bad key file fails the start cleanly
  const sched = options.scheduler ?? {};
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
    signer,
    executors: new ExecutorRegistry([
      INLINE_ANALYSIS,
      AGENT_BRIDGE,
      RUNNER_INDEX,
      ...(options.executors ?? []),
      ...(options.sessions ? [EMBEDDED_SESSIONS] : []),
    ]),
  };
  const policy = { ...DEFAULT_POLICY, ...options.policy };
  let bootstrap: BootstrapOutcome | null;
  try {
    bootstrap = await bootstrapTenant(deps, policy, options);
  } catch (e) {
    await ldb.close();
    throw e;
  }
  // Verified API keys per replica; a revocation anywhere evicts here (NOTIFY in the revoking transaction).
  const keyCache = new KeyCache();
  let unlistenKeys: () => Promise<void>;
  try {
    unlistenKeys = await ldb.listen(KEYS_CHANNEL, (hash) => keyCache.evict(hash));
  } catch (e) {
    await ldb.close();
    throw e;
  }
  const cascades = new CascadeWorker(deps, options.cascade);
  const trajectories = options.trajectories ? new RunTrajectories(options.trajectories, ldb) : null;
  const lease = leasePolicy(options.scheduler?.lease ?? {});
  // The fallback looks of every announcement-driven loop, spaced out while this process is alone on its database.
  const fallback = fallbackPoll(ldb, sched.pollMs ?? 1000, sched.alonePollMs);
  // Runners' session channels (held by whichever replica each runner connected to): sessions on runners.
  const hub = options.sessions
    ? new RunnerSessionHub(deps, {
        leaseMs: lease.leaseMs,
        ...(sched.replicaId === undefined ? {} : { replica: sched.replicaId }),
        ...(options.sessionRelay === false
          ? { relay: false }
          : { relay: { alonePollMs: fallback.aloneMs, ...options.sessionRelay } }),
      })
    : null;
  await hub?.start();
  const sessions: Sessions | null = options.sessions
    ? startSessions(deps, trajectories, {
        ...(hub ? { hub } : {}),
        ...options.sessions,
        reaper: { fallback, ...options.sessions.reaper },
        ...(sched.enabled === false && options.sessions.sweep === undefined ? { sweep: false } : {}),
      })
    : null;
  // Leases are swept by the dispatch loop when it runs (any holder's), else by the runners' waiters.
  const waiters = new LeaseWaiters(deps, lease, sched.enabled === false);
  const turnWaiters = new TurnWaiters(ldb);
  const runners = runnerService(deps, waiters, {
    fallback,
    lease,
    trajectories,
    ...(options.artifactMaxBytes === undefined ? {} : { artifactMaxBytes: options.artifactMaxBytes }),
  });
  const services: ControlPlaneServices = withStorableGuard({
    auth: authService(deps, policy, keyCache),
    runs: runService(deps, cascades, options.create, () => sessions?.service),
    events: eventFeed(deps, options.scheduler?.pollMs ?? 1000),
    groups: groupService(deps, options.judge, (tenant, runId, reason) =>
      cancelTree(deps, cascades, tenant, runId, reason),
    ),
    subscriptions: subscriptionService(deps),
    agentBridge: agentBridgeService(deps),
    runners,
    ...(sessions ? { sessions: sessions.service } : {}),
    agents: agentService(deps, {
      lease,
      trajectories,
      waiters: turnWaiters,
      fallback:
        options.agents?.pollMs === undefined
          ? fallback
          : fallbackPoll(ldb, options.agents.pollMs, options.agents.alonePollMs ?? fallback.aloneMs),
      ...(options.agents?.recheckGapMs === undefined ? {} : { recheckGapMs: options.agents.recheckGapMs }),
      ...(options.agents?.storageWattsPerGb ? { storageWattsPerGb: options.agents.storageWattsPerGb } : {}),
      ...(options.agents?.requirePaired ? { requirePaired: true } : {}),
    }),
  });
  const trajectoryJobs = trajectories
    ? new TrajectoryJobs(deps, trajectories, { fallback, ...options.trajectoryJobs })
    : null;
  const trajectoryService = trajectories ? new TrajectoryService(deps, trajectories, options.judge) : null;
  await waiters.start();
  await turnWaiters.start();
  const keys = new KeyRing(signer);
  keys.addSource(() => runners.keys());
  const agents = services.agents;
  if (agents) keys.addSource(() => agents.hostKeys());
  let dispatch: DispatchLoop | null = null;
  let triggers: TriggerLoop | null = null;
  if (sched.enabled !== false) {
    dispatch = new DispatchLoop(deps, {
      pollMs: sched.pollMs ?? 1000,
      fallback,
      concurrency: sched.inlineConcurrency ?? 8,
      timeoutMs: sched.inlineTimeoutMs ?? 30_000,
      lease,
      ...(sched.replicaId === undefined ? {} : { holder: sched.replicaId }),
    });
    triggers = new TriggerLoop(deps, sched.pollMs ?? 1000, fallback);
    await dispatch.start();
    const local = dispatch;
    deps.localDispatch = { token: local.wakeToken, wake: () => local.wake() };
    const ticker = triggers;
    deps.schedulesChanged = () => ticker.schedulesChanged();
    await triggers.start();
  }
  // Cascades a previous process left halfway (a crash) complete now, in the background.
  const resumed = cascades
    .resumePending()
    .catch((e) => deps.log('error', 'resuming open cascades failed', { error: String(e) }));
  if (trajectoryJobs && sched.enabled !== false) trajectoryJobs.start();
  const headLog = options.headLog
    ? openHeadLog(ldb.db, { log: deps.log, fallback, ...options.headLog })
    : null;
  const vacuum = options.vacuum
    ? new VacuumKeeper(ldb.db, ldb.dialect, deps.log, { fallback, ...options.vacuum }, deps.queueStats)
    : null;
  // Every write of a record segment, and every run made terminal (its seal queued), writes a fact (announced on
  // EVENTS_CHANNEL), and every lease granted or run requeued is announced on DISPATCH_CHANNEL: the loops that
  // space their looks out while alone (db/fallback-poll.ts) keep their pace while facts come — the head log's
  // probe, the seal queue, the lease sweep, the sessions' reaper and the vacuum keeper.
  const unlistenNudges: Array<() => Promise<void>> = [];
  const nudge = () => {
    headLog?.nudge();
    trajectoryJobs?.nudge();
    dispatch?.nudgeSweep();
    sessions?.reaper.nudge();
    vacuum?.nudge();
  };
  for (const channel of [EVENTS_CHANNEL, DISPATCH_CHANNEL])
    unlistenNudges.push(await ldb.listen(channel, nudge));
  await vacuum
    ?.start()
    .catch((e: unknown) => deps.log('warn', 'vacuum keeper not started', { error: String(e) }));
  return {
    services,
    dialect: ldb.dialect,
    bootstrap,
    trajectories,
    trajectoryJobs,
    trajectoryService,
    async health() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer within 3 s')), 3_000);
      });
      try {
        await Promise.race([deps.db.selectFrom('tenants').select('id').limit(1).execute(), late]);
        return { ok: true, dialect: ldb.dialect };
      } catch (e) {
        return { ok: false, dialect: ldb.dialect, reason: e instanceof Error ? e.message : String(e) };
      } finally {
        clearTimeout(timer);
      }
    },
    queueDepth: () => queueDepth(deps.db),
    keys,
    executors: deps.executors,
    sessions,
    sessionHub: hub,
    headLog,
    async close() {
      await hub?.close();
      await sessions?.stop();
      for (const u of unlistenNudges) await u();
      await headLog?.stop();
      await cascades.stop();
      await resumed;
      await waiters.stop();
      await turnWaiters.stop();
      await dispatch?.stop();
      await triggers?.stop();
      await trajectoryJobs?.stop();
      await vacuum?.stop();
      await deps.queueStats.settled();
      await unlistenKeys();
      await options.trajectories?.close();
      await ldb.close();
    },
    internals: {
      deps,
      ldb,
      dispatch,
      triggers,
      vacuum,
      turnWaiters,
      leaseWaiters: waiters,
      cascadesResumed: resumed,
    },
  };
}
