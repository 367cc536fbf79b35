// The lease rule's numbers: how long a lease lasts without a heartbeat, how often holders renew, how
// many lost executions fail a run. One policy for every executor.
import { z } from 'zod';

export interface LeasePolicy {
  /** A lease not renewed for this long is lost (EVERDICT_LEASE_MS, default 10 s). */
  readonly leaseMs: number;
  /** Holders renew this often (default 2 s; at most a fifth of leaseMs). */
  readonly heartbeatMs: number;
  /**
   * Lost executions (expired leases of a running run) that fail it `executor_lost`: the ones before are
   * requeued (EVERDICT_MAX_ATTEMPTS, default 3). Starts and resumes after a clean park do not count (sweep.ts).
   */
  readonly maxAttempts: number;
  /** How often the expiry sweep runs (default heartbeatMs): lost leases are found within leaseMs + this. */
  readonly sweepMs: number;
}

export const DEFAULT_LEASE_MS = 10_000;
export const DEFAULT_HEARTBEAT_MS = 2_000;
export const DEFAULT_MAX_ATTEMPTS = 3;

export const LeasePolicyInput = z.strictObject({
  leaseMs: z.number().int().min(50).max(3_600_000).optional(),
  heartbeatMs: z.number().int().min(10).max(600_000).optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  sweepMs: z.number().int().min(10).max(600_000).optional(),
});
export type LeasePolicyInput = z.input<typeof LeasePolicyInput>;

export function leasePolicy(input: LeasePolicyInput = {}): LeasePolicy {
  const p = LeasePolicyInput.parse(input);
  const leaseMs = p.leaseMs ?? DEFAULT_LEASE_MS;
  const heartbeatMs = p.heartbeatMs ?? Math.min(DEFAULT_HEARTBEAT_MS, Math.max(10, Math.floor(leaseMs / 5)));
  return {
    leaseMs,
    heartbeatMs,
    maxAttempts: p.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    sweepMs: p.sweepMs ?? heartbeatMs,
  };
}
