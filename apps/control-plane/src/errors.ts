// The one error class of the control plane. Every refusal carries a stable `code` mapping to one HTTP status.

export const ERROR_STATUS = {
  bad_request: 400,
  /** A string holds U+0000, which PostgreSQL text/jsonb cannot store (same code as the HTTP edge's). */
  nul_character: 400,
  /** A `judge` grader was asked for, but this control plane has no Judge configured. */
  judge_unavailable: 400,
  unauthorized: 401,
  forbidden: 403,
  envelope_exhausted: 402,
  not_found: 404,
  conflict: 409,
  capacity_exceeded: 429,
  record_invalid: 500,
  internal: 500,
  not_implemented: 501,
} as const;

export type ControlPlaneErrorCode = keyof typeof ERROR_STATUS;

export class ControlPlaneError extends Error {
  readonly code: ControlPlaneErrorCode;
  readonly httpStatus: number;
  /** Machine-readable context; for 402/429 `details.rule` names the refusing admission rule. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ControlPlaneErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ControlPlaneError';
    this.code = code;
    this.httpStatus = ERROR_STATUS[code];
    this.details = details;
  }

  toJSON(): { error: { code: ControlPlaneErrorCode; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: { ...this.details } } };
  }
}

export function isControlPlaneError(e: unknown): e is ControlPlaneError {
  return e instanceof ControlPlaneError;
}

export const notFound = (what: string, id: string): ControlPlaneError =>
  new ControlPlaneError('not_found', `${what} ${id} not found`, { id });

export const notImplemented = (what: string): ControlPlaneError =>
  new ControlPlaneError('not_implemented', `${what} is not implemented yet`);
