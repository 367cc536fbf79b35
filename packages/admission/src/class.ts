// Class assignment: a person waiting is interactive; autonomous work never claims a human's priority.
import type { RunCause, RunClass } from '@everdict/run-model';

/** The class a run gets when it asks for none. Agent- and event-caused runs default to background. */
export const DEFAULT_CLASS: Readonly<Record<RunCause, RunClass>> = {
  member: 'interactive',
  api: 'interactive',
  run: 'background',
  event: 'background',
  schedule: 'batch',
  ci: 'batch',
};

/** Causes with no person waiting on the other end. */
const AUTONOMOUS: ReadonlySet<RunCause> = new Set(['run', 'event', 'schedule', 'ci']);

export interface ClassInput {
  readonly cause: RunCause;
  readonly causedByRunId?: string | undefined;
  readonly class?: RunClass | undefined;
}

/** A run with a causer is autonomous whatever its nominal cause. */
export function isAutonomous(input: ClassInput): boolean {
  return input.causedByRunId !== undefined || AUTONOMOUS.has(input.cause);
}

/**
 * The requested class is honored, except that autonomous work asking for `interactive` is held at
 * `background`; with no request, caused runs get background and others their cause's default.
 */
export function assignClass(input: ClassInput): RunClass {
  const autonomous = isAutonomous(input);
  if (input.class) return autonomous && input.class === 'interactive' ? 'background' : input.class;
  return input.causedByRunId !== undefined ? 'background' : DEFAULT_CLASS[input.cause];
}
