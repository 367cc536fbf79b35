// A run's own expiry (`everdict run --ttl`, `expiresAt`: the lease's `spec.limits.expiresAt`) is its sandbox's
// wall deadline: the driver stops the command there — a `timeout` stop it observed, with bound `deadline` — and
// the interval completes failed as at any other limit (command-end.ts).
import { MAX_WALL_TIMEOUT_MS } from '@everdict/placement';
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
