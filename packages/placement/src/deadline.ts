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
