// The one error class of this package: a stable code, one HTTP status per code, structured details.
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

export class RunModelError extends Error {
  override readonly name = 'RunModelError';
  readonly code: RunModelErrorCode;
  readonly httpStatus: (typeof RUN_MODEL_ERROR_STATUS)[RunModelErrorCode];
  readonly details: RunModelErrorDetails;

  constructor(code: RunModelErrorCode, message: string, details: RunModelErrorDetails = {}) {
    super(message);
    this.code = code;
    this.httpStatus = RUN_MODEL_ERROR_STATUS[code];
    this.details = details;
  }

  toJSON(): { code: RunModelErrorCode; message: string; details: RunModelErrorDetails } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isRunModelError(value: unknown): value is RunModelError {
  return value instanceof RunModelError;
}

/** Parse at a boundary: the data, or an `invalid_input` RunModelError carrying zod's issues. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what = 'input'): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
  const first = issues[0];
  throw new RunModelError(
    'invalid_input',
    `invalid ${what}${first ? `: ${first.path} ${first.message}` : ''}`,
    {
      issues,
    },
  );
}
