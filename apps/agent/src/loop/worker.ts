// The agent service's work loop: lease ready turns (like a runner leases runs), heartbeat each lease while
// its interval runs, stop at once when the control plane says it is lost (no report, no segment: an
// interval nobody reported is not recorded), and run one interval per lease.
import type { ControlPlane, TurnLease } from '../control-plane.js';
import { isAgentError } from '../errors.js';
import { type IntervalOptions, type IntervalOutcome, runInterval } from './interval.js';

export interface WorkerOptions extends IntervalOptions {
  /** Turns run at once. */
  readonly slots?: number;
}

export type LeaseOutcome = IntervalOutcome | { readonly result: 'lost'; readonly runId: string };

async function withHeartbeat<T>(
  cp: ControlPlane,
  holder: string,
  lease: TurnLease,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T | 'lost'> {
  const abort = new AbortController();
  const ref = { runId: lease.runId, epoch: lease.epoch };
  const timer = setInterval(() => {
    cp.heartbeat(holder, [ref]).then(
      ({ lost }) => {
        if (lost.includes(lease.runId)) abort.abort(new Error('lease lost'));
      },
      () => {},
    );
  }, lease.heartbeatMs);
  timer.unref();
  try {
    // A completed interval was reported and accepted; a heartbeat answering `lost` after that (the report
    // released the lease) changes nothing.
    return await run(abort.signal);
  } catch (e) {
    // Lost: the heartbeat said so, or a call about the turn found the lease gone first.
    if (abort.signal.aborted || (isAgentError(e) && e.code === 'stale_lease')) return 'lost';
    throw e;
  } finally {
    clearInterval(timer);
  }
}

/** Leases what is ready (waiting up to `waitMs`) and runs one interval of each; what happened to each. */
export async function workOnce(options: WorkerOptions, waitMs = 0): Promise<LeaseOutcome[]> {
  const cp = options.controlPlane;
  const leases = await cp.lease({ free: options.slots ?? 4, holder: options.holder, waitMs });
  return Promise.all(
    leases.map(async (lease): Promise<LeaseOutcome> => {
      const out = await withHeartbeat(cp, options.holder, lease, (signal) =>
        runInterval(lease, { ...options, signal }),
      );
      return out === 'lost' ? { result: 'lost', runId: lease.runId } : out;
    }),
  );
}

/** The service: lease, work, repeat until `signal` aborts. */
export async function serve(
  options: WorkerOptions & { readonly signal: AbortSignal },
  onOutcome?: (o: LeaseOutcome) => void,
) {
  while (!options.signal.aborted) {
    const outs = await workOnce(options, 20_000).catch((e: unknown) => {
      if (options.signal.aborted) return [];
      throw e;
    });
    for (const o of outs) onOutcome?.(o);
  }
}
