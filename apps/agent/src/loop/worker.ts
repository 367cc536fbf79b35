// The agent service's work loop: lease ready turns (like a runner leases runs), heartbeat each lease while
// its interval runs, stop at once when the control plane says it is lost (no report, no segment: an
// interval nobody reported is not recorded), and run one interval per lease.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlane, TurnLease } from '../control-plane.js';
import { isAgentError } from '../errors.js';
import { hostCapabilities } from '../host/capabilities.js';
import { type IntervalOptions, type IntervalOutcome, runInterval } from './interval.js';

export interface WorkerOptions extends IntervalOptions {
  /** Turns run at once. */
  readonly slots?: number;
}

export type LeaseOutcome = IntervalOutcome | { readonly result: 'lost'; readonly runId: string };

/** `run` under the lease's heartbeat (its signal aborts when the control plane says the lease is lost). */
export async function withHeartbeat<T>(
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

/** One lease's interval, under its heartbeat: what happened to it. */
async function workLease(options: WorkerOptions, lease: TurnLease): Promise<LeaseOutcome> {
  const out = await withHeartbeat(options.controlPlane, options.holder, lease, (signal) =>
    runInterval(lease, { ...options, signal }),
  );
  return out === 'lost' ? { result: 'lost', runId: lease.runId } : out;
}

/** Leases what is ready (waiting up to `waitMs`) and runs one interval of each; what happened to each. */
export async function workOnce(options: WorkerOptions, waitMs = 0): Promise<LeaseOutcome[]> {
  const cp = options.controlPlane;
  const leases = await cp.lease({
    free: options.slots ?? 4,
    holder: options.holder,
    waitMs,
    signer: options.signer,
    capabilities: hostCapabilities(options.protocol),
  });
  return Promise.all(leases.map((lease) => workLease(options, lease)));
}

/** What a pass says of one lease: its outcome, or the error its interval ended on (the lease then expires). */
export type LeaseReport =
  | LeaseOutcome
  | { readonly result: 'error'; readonly runId: string; readonly error: { code: string; message: string } };

/**
 * `workOnce`, but every lease is reported: an interval that throws is `{result: 'error'}` for its turn and
 * does not hide what happened to the others of the pass (each runs to its end).
 */
export async function workEach(options: WorkerOptions, waitMs = 0): Promise<LeaseReport[]> {
  const cp = options.controlPlane;
  const leases = await cp.lease({
    free: options.slots ?? 4,
    holder: options.holder,
    waitMs,
    signer: options.signer,
    capabilities: hostCapabilities(options.protocol),
  });
  const settled = await Promise.allSettled(leases.map((lease) => workLease(options, lease)));
  return settled.map((s, i): LeaseReport => {
    if (s.status === 'fulfilled') return s.value;
    const e: unknown = s.reason;
    const code = isAgentError(e) ? e.code : 'internal';
    return {
      result: 'error',
      runId: leases[i]!.runId,
      error: { code, message: e instanceof Error ? e.message : String(e) },
    };
  });
}

export interface ServeOptions extends WorkerOptions {
  /** Stops leasing; the intervals already running finish (their leases are the control plane's to judge). */
  readonly signal: AbortSignal;
  /** How long a lease poll waits for work (default 20 s). */
  readonly waitMs?: number;
  /** Pause after a failed lease request before the next (default 1 s). */
  readonly retryMs?: number;
  /** A failed lease request or interval: the service goes on (logged by the caller). */
  readonly onError?: (err: unknown) => void;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
const pause = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => undefined);

/**
 * The service: keeps `slots` intervals running — a lease poll asks for as many turns as there are free slots,
 * and a slot is taken again as soon as its interval ends (a slow turn does not hold up the others) — until
 * `signal` aborts; then it waits for the running intervals. A failed lease request (the control plane
 * restarting or draining: 503, a reset connection) is not fatal: the next one follows after `retryMs`, as a
 * runner's does. A failed interval is reported to `onError` and its slot freed (its lease expires and the
 * turn is leased again).
 */
export async function serve(options: ServeOptions, onOutcome?: (o: LeaseOutcome) => void): Promise<void> {
  const { controlPlane: cp, signal } = options;
  const slots = options.slots ?? 4;
  const running = new Set<Promise<void>>();
  const stopped = new Promise<void>((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  while (!signal.aborted) {
    if (running.size >= slots) {
      await Promise.race([...running, stopped]);
      continue;
    }
    let leases: TurnLease[];
    try {
      leases = await cp.lease({
        free: slots - running.size,
        holder: options.holder,
        waitMs: options.waitMs ?? 20_000,
        signal,
        signer: options.signer,
        capabilities: hostCapabilities(options.protocol),
      });
    } catch (err) {
      if (signal.aborted) break;
      options.onError?.(err);
      await pause(options.retryMs ?? 1_000, signal);
      continue;
    }
    for (const lease of leases) {
      const one: Promise<void> = workLease(options, lease)
        .then((o) => onOutcome?.(o))
        .catch((err: unknown) => options.onError?.(err))
        .finally(() => running.delete(one));
      running.add(one);
    }
  }
  await Promise.all(running);
}
