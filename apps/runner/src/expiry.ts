// A run's own expiry (`everdict run --ttl`, `expiresAt`: the lease's `spec.limits.expiresAt`) is its sandbox's
// wall deadline: the driver stops the command there — a `timeout` stop it observed, with bound `deadline` — and
// the interval completes failed as at any other limit. A deadline already past when the command would start is
// the same stop, before it ran.
import { PassThrough } from 'node:stream';
import { type ExecStream, MAX_WALL_TIMEOUT_MS, type PlacementError } from '@everdict/placement';
import type { Lease } from './protocol.js';

/** The run's expiry (epoch ms) when its lease names one. */
export function expiryOf(lease: Pick<Lease, 'spec'>): number | undefined {
  const at = lease.spec.limits?.expiresAt;
  const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/** The sandbox's limits for a run that expires: its wall deadline at the expiry (at least 1 ms from now). */
export function expiryLimits(
  lease: Pick<Lease, 'spec'>,
  nowMs: number,
): { wallTimeoutMs: number } | undefined {
  const at = expiryOf(lease);
  if (at === undefined) return undefined;
  return { wallTimeoutMs: Math.min(MAX_WALL_TIMEOUT_MS, Math.max(1, at - nowMs)) };
}

/** A command the driver refused to start at its deadline: no output, and the refusal as how it ended. */
export function stoppedBeforeStart(stop: PlacementError): ExecStream {
  const ended = () => {
    const s = new PassThrough();
    s.end();
    return s;
  };
  const exit = Promise.reject(stop);
  exit.catch(() => undefined);
  return {
    stdin: new PassThrough(),
    stdout: ended(),
    stderr: ended(),
    pty: false,
    resize: () => false,
    kill: () => {},
    exit,
  };
}

/** What a stopped command's summary says: its program not started, its expiry, or the limit that stopped it. */
export function stopSummary(stop: PlacementError, lease: Pick<Lease, 'spec'>): string {
  if (stop.code === 'spawn_failed') return `its program could not be started: ${stop.message}`;
  const at = expiryOf(lease);
  if (stop.code === 'timeout' && stop.detail.bound === 'deadline' && at !== undefined)
    return `its TTL ran out (expiresAt ${new Date(at).toISOString()}): ${stop.message}`;
  return `stopped at a limit of its sandbox (${stop.code}): ${stop.message}`;
}
