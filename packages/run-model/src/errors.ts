// The one error class of this package: a stable code, one HTTP status per code, structured details, and —
// for an input that failed its schema — zod's issues as zod reported them.
import type { z } from 'zod';

export const RUN_MODEL_ERROR_STATUS = {
  /** A boundary input failed its schema or a model invariant. */
  invalid_input: 400,
  /** The event is not legal from the run's current (non-terminal) status. */
  illegal_transition: 409,
  /** The run already settled; terminal is terminal (a second settle lands here). */
  already_terminal: 409,
  /** A subscription may not cause this run: self-cause, depth cap, cooldown or disabled. */
  causation_refused: 429,
} as const;

export type RunModelErrorCode = keyof typeof RUN_MODEL_ERROR_STATUS;
export type RunModelErrorDetails = Readonly<Record<string, unknown>>;

/**
 * One offending field of an input run-model refused, exactly as zod reported it: its issue `code`
 * (`invalid_type`, `too_big`, `unrecognized_keys`, `custom` …), its `path` (keys and array indexes, relative
 * to the value parsed) and `message`, with the code's own members (a bound's `origin` and `maximum`, a custom
 * check's `params` — e.g. `{ code: 'out_of_range' }` for a value past its range that is no plain number).
 */
export type RunModelIssue = z.core.$ZodIssue;

export class RunModelError extends Error {
  override readonly name = 'RunModelError';
  readonly code: RunModelErrorCode;
  readonly httpStatus: (typeof RUN_MODEL_ERROR_STATUS)[RunModelErrorCode];
  readonly details: RunModelErrorDetails;
  /**
   * Set on an `invalid_input` whose input failed a schema (`parseOrThrow`, a malformed status-machine event,
   * an invalid run group, a session expiry past its bound): the offending fields, zod's codes and paths kept.
   * Undefined for every other refusal (a model invariant, a state, a clock).
   */
  readonly issues: readonly RunModelIssue[] | undefined;

  constructor(
    code: RunModelErrorCode,
    message: string,
    details: RunModelErrorDetails = {},
    issues?: readonly RunModelIssue[],
  ) {
    super(message);
    this.code = code;
    this.httpStatus = RUN_MODEL_ERROR_STATUS[code];
    this.details = details;
    this.issues = issues;
  }

  toJSON(): {
    code: RunModelErrorCode;
    message: string;
    details: RunModelErrorDetails;
    issues?: readonly RunModelIssue[];
  } {
    return {
      code: this.code,
      message: this.message,
      details: this.details,
      ...(this.issues === undefined ? {} : { issues: this.issues }),
    };
  }
}

export function isRunModelError(value: unknown): value is RunModelError {
  return value instanceof RunModelError;
}

/**
 * An `invalid_input` RunModelError for input that failed a schema: `issues` as zod reported them (codes and
 * paths kept), and a message naming the first (`invalid <what>: <path> <message>`).
 */
export function schemaRefusal(
  what: string,
  issues: readonly RunModelIssue[],
  details: RunModelErrorDetails = {},
): RunModelError {
  const first = issues[0];
  const named = first ? `: ${first.path.map(String).join('.')} ${first.message}` : '';
  return new RunModelError('invalid_input', `invalid ${what}${named}`, details, issues);
}

/** Parse at a boundary: the data, or an `invalid_input` RunModelError carrying zod's issues (`issues`). */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what = 'input'): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw schemaRefusal(what, result.error.issues);
}
