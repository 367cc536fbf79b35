// The daemon's options and its lease bound per slot (daemon.ts).
import type { IntervalDeps } from './interval.js';

/**
 * Leases a runner holds at most per slot: the one executing and one settling behind it (its artifacts and
 * completion). The control plane's grants use the same bound (apps/control-plane/src/runners/leases.ts,
 * `LEASES_PER_SLOT`); the driver is given this many sandboxes (a settling interval's sandbox is disposed
 * before its completion is sent, but after its slot freed).
 */
export const LEASES_PER_SLOT = 2;
export const leaseBound = (slots: number): number => LEASES_PER_SLOT * slots;

export interface DaemonOptions extends IntervalDeps {
  readonly slots: number;
  /** Long-poll wait per lease request (≤ 25 s). */
  readonly waitMs?: number;
  readonly heartbeatMs?: number;
  /** How long a drain waits for running intervals before killing them. */
  readonly graceMs?: number;
  /**
   * How long a call to the control plane may go unanswered (a long-poll: past its wait) before it fails as a
   * call with no answer; also the most a drain waits, past its grace, for the killed intervals. Default 30 s.
   */
  readonly requestTimeoutMs?: number;
  /**
   * How a slot freed by a finished compute gets its next lease: `'batch'` (default) waits for the completion
   * batch that will be sent anyway (no request of its own) and long-polls only when none will; `'poll'` asks
   * at once with the long-poll.
   */
  readonly leaseOnFree?: 'poll' | 'batch';
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}
