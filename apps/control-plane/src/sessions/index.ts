// Sessions: held-open sandbox runs (kind sandbox, lifetime session) — see the control plane README.
import type { Driver } from '@everdict/placement';
import { backendFromEnv, type ObjectBackend } from '@everdict/trajectory-store';
import type { ExecutorLane } from '../executors/registry.js';
import type { RunnerSessionHub } from '../runners/sessions/hub.js';
import type { Deps } from '../services/context.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { embeddedCompute } from './compute.js';
import { SessionLog, TRAJECTORY_CAP_BYTES } from './log.js';
import { type ReaperOptions, SessionReaper } from './reaper.js';
import { SessionService } from './service.js';
import { objectSnapshots } from './snapshots.js';

export { resumeSession, suspendSession } from './park.js';
export { SessionReaper } from './reaper.js';
export { isSessionSandbox, SessionService } from './service.js';
export { terminalServer } from './terminal.js';

export interface SessionOptions {
  /** The embedded placement: a driver this process holds (locally `ProcessDriver`); absent: runners only. */
  readonly driver?: Driver;
  /** Paired runners' session channels (runners/sessions/hub.ts): sessions held by runners. */
  readonly hub?: RunnerSessionHub;
  /** Where parks' snapshots go; default: the trajectory store's backend, else `<snapshotDir>`. */
  readonly objects?: ObjectBackend;
  readonly snapshotDir?: string;
  readonly reaper?: ReaperOptions;
  /** Per-session trajectory cap (default 64 MiB). */
  readonly trajectoryCapBytes?: number;
  /** Run the reaper loop (default true; the start-up orphan recovery always runs). */
  readonly sweep?: boolean;
}

/** The executor lane of the embedded placement: session sandboxes on the process rung. */
export const EMBEDDED_SESSIONS: ExecutorLane = {
  name: 'embedded-sessions',
  accepts: (kind, p) =>
    kind === 'sandbox' && p.where === 'driver' && (p.isolation ?? 'process') === 'process',
};

export interface Sessions {
  readonly service: SessionService;
  readonly reaper: SessionReaper;
  readonly orphans: Promise<unknown>;
  stop(): Promise<void>;
}

export function startSessions(
  deps: Deps,
  trajectories: RunTrajectories | null,
  options: SessionOptions,
): Sessions {
  const onError = (e: unknown) => deps.log('warn', 'sessions', { error: String(e) });
  const objects =
    options.objects ??
    trajectories?.store.backend ??
    backendFromEnv({}, { dataDir: options.snapshotDir ?? '.everdict/sessions' });
  const core = {
    deps,
    // (Called only once the sessions serve: `reaper` is set by then.)
    deadlineMoved: () => reaper.nudge(),
    compute: options.driver ? embeddedCompute(options.driver) : null,
    runners: options.hub ?? null,
    snapshots: objectSnapshots(objects),
    log: new SessionLog(deps.db, trajectories, options.trajectoryCapBytes ?? TRAJECTORY_CAP_BYTES, onError),
  };
  const service = new SessionService(core);
  const reaper = new SessionReaper(core, {
    onError,
    ...(options.hub ? { runnerLeaseMs: options.hub.opts.leaseMs } : {}),
    ...options.reaper,
  });
  // Each runner channel that (re)connects: what an earlier process of that runner left is reaped by label.
  options.hub?.onConnect((runnerId) =>
    reaper.recoverRunner(runnerId).then((r) => {
      if (r.removed > 0) deps.log('info', 'sessions: runner orphans reaped', { runnerId, ...r });
    }, onError),
  );
  const orphans = reaper.recoverOrphans().then((r) => {
    if (r.removed > 0) deps.log('info', 'sessions: orphans reaped', { ...r });
    if (options.sweep !== false) reaper.start();
  }, onError);
  return {
    service,
    reaper,
    orphans,
    async stop() {
      await orphans;
      await reaper.stop();
    },
  };
}
