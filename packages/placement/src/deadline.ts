// The wall clock of a command: its own timeout, never past the sandbox's deadline.
import { PlacementError } from './errors.js';
import type { SandboxHandle } from './spec.js';

export interface CommandBudget {
  /** Milliseconds the command may run. */
  readonly ms: number;
  /** Which bound it is, for the `timeout` error's detail. */
  readonly bound: 'exec' | 'deadline';
}

/** The command's wall budget now; `timeout` if the sandbox's deadline has already passed. */
export function commandBudget(
  handle: SandboxHandle,
  timeoutMs: number | undefined,
  now = Date.now(),
): CommandBudget {
  const left = handle.deadlineMs - now;
  if (left <= 0) {
    throw new PlacementError('timeout', 'the sandbox passed its wall deadline', {
      bound: 'deadline',
      deadlineMs: handle.deadlineMs,
    });
  }
  if (timeoutMs !== undefined && timeoutMs <= left) return { ms: timeoutMs, bound: 'exec' };
  return { ms: left, bound: 'deadline' };
}

export function timeoutError(budget: CommandBudget, detail: Record<string, unknown> = {}): PlacementError {
  const what =
    budget.bound === 'exec' ? `the command's ${budget.ms} ms timeout` : "the sandbox's wall deadline";
  return new PlacementError('timeout', `${what} ran out`, {
    bound: budget.bound,
    limitMs: budget.ms,
    ...detail,
  });
}

/** setTimeout's largest delay (2^31 − 1 ms, about 24.8 days): Node fires a longer one at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer for any delay: one longer than setTimeout's range re-arms in steps, so it never fires early. */
export function wallTimer(ms: number, fn: () => void): { clear(): void } {
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(
      left > MAX_TIMER_MS ? () => arm(left - MAX_TIMER_MS) : fn,
      Math.max(0, Math.min(left, MAX_TIMER_MS)),
    );
  };
  arm(ms);
  return { clear: () => clearTimeout(timer) };
}
