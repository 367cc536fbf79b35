// The one error class of @everdict/admission: a stable `code` that maps to exactly one HTTP status.

export type AdmissionErrorCode =
  | 'bad_request' // 400: the request or a policy failed to parse
  | 'unknown_tenant' // 404: no policy/root envelope for this tenant
  | 'unknown_run' // 404: a run (causer, settle target) is not known in this tenant
  | 'unknown_envelope' // 404
  | 'envelope_exists' // 409: a delegated slice id is already taken
  | 'run_exists' // 409: a different request already admitted this run id
  | 'contended' // 409: the admission kept racing concurrent writers; retry
  | 'agent_disabled' // 409: a refusal because the agent being activated is disabled, raised
  | 'causer_cancelled' // 409: a refusal because the causer (or an ancestor whose cascade reaches it) is cancelled, raised
  | 'envelope_exhausted' // 402: a refusal by the envelope rule, raised
  | 'capacity_refused'; // 429: a refusal by a cap or fan-out rule, raised

const STATUS: Record<AdmissionErrorCode, number> = {
  bad_request: 400,
  unknown_tenant: 404,
  unknown_run: 404,
  unknown_envelope: 404,
  envelope_exists: 409,
  run_exists: 409,
  contended: 409,
  agent_disabled: 409,
  causer_cancelled: 409,
  envelope_exhausted: 402,
  capacity_refused: 429,
};

export class AdmissionError extends Error {
  readonly code: AdmissionErrorCode;
  readonly httpStatus: number;
  readonly detail: Readonly<Record<string, unknown>>;

  constructor(code: AdmissionErrorCode, message: string, detail: Record<string, unknown> = {}) {
    super(message);
    this.name = 'AdmissionError';
    this.code = code;
    this.httpStatus = STATUS[code];
    this.detail = detail;
  }
}

export function httpStatusOf(code: AdmissionErrorCode): number {
  return STATUS[code];
}

/** Parse a boundary input; a failure is a typed 400, never a bare ZodError across the package boundary. */
export function parseOrThrow<T>(
  schema: {
    safeParse(input: unknown): { success: true; data: T } | { success: false; error: { message: string } };
  },
  input: unknown,
  what: string,
): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new AdmissionError('bad_request', `invalid ${what}: ${result.error.message}`);
  return result.data;
}

/**
 * `now` (epoch ms) is a parameter of every step; a non-finite one would be stored as an admission or start
 * time and poison the queue's aging order (NaN compares false: every tenant would count as aged). Null
 * when `now` is a finite number, else the 400 to refuse with.
 */
export function invalidNow(now: number): AdmissionError | null {
  return Number.isFinite(now)
    ? null
    : new AdmissionError('bad_request', `now must be finite epoch ms, got ${now}`);
}
