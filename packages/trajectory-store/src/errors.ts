// The one error class of @everdict/trajectory-store: a stable `code` that maps to exactly one HTTP status.

export const TRAJECTORY_ERROR_STATUS = {
  /** An input failed its schema: an event, an id, a batch too large, an OTLP body that does not decode. */
  bad_request: 400,
  /** No such trajectory, imported trajectory or artifact in this tenant (another tenant's is not found). */
  not_found: 404,
  /** Retention deleted this sealed trajectory; the deletion record rides in `detail.deletion`. */
  trajectory_deleted: 404,
  /** The trajectory is sealed (or deleted): it takes no more events. */
  trajectory_sealed: 409,
  /** An event reuses a stored `seq` with different content. */
  event_conflict: 409,
  /** An event's `seq` is not above the last stored one and is not a re-sent stored event. */
  out_of_order: 409,
  /** Stored bytes do not match their digest (or do not decode): never served as valid. */
  integrity_failed: 503,
  /** The object store (directory, bucket) or a pull source failed to answer. */
  storage_unavailable: 503,
} as const;

export type TrajectoryErrorCode = keyof typeof TRAJECTORY_ERROR_STATUS;

export class TrajectoryStoreError extends Error {
  override readonly name = 'TrajectoryStoreError';
  readonly code: TrajectoryErrorCode;
  readonly httpStatus: (typeof TRAJECTORY_ERROR_STATUS)[TrajectoryErrorCode];
  readonly detail: Readonly<Record<string, unknown>>;

  constructor(code: TrajectoryErrorCode, message: string, detail: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.httpStatus = TRAJECTORY_ERROR_STATUS[code];
    this.detail = detail;
  }

  toJSON(): { code: TrajectoryErrorCode; message: string; detail: Readonly<Record<string, unknown>> } {
    return { code: this.code, message: this.message, detail: this.detail };
  }
}

export function isTrajectoryStoreError(value: unknown): value is TrajectoryStoreError {
  return value instanceof TrajectoryStoreError;
}

/** Parse a boundary input; a failure is a typed 400, never a bare ZodError across the package boundary. */
export function parseOrThrow<T>(
  schema: {
    safeParse(
      input: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> } };
  },
  input: unknown,
  what: string,
): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
  const first = issues[0];
  throw new TrajectoryStoreError(
    'bad_request',
    `invalid ${what}${first ? `: ${first.path ? `${first.path} ` : ''}${first.message}` : ''}`,
    { issues },
  );
}

/** Wraps a backend failure (not one of ours) as `storage_unavailable`. */
export function storageError(cause: unknown, what: string): TrajectoryStoreError {
  if (cause instanceof TrajectoryStoreError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new TrajectoryStoreError('storage_unavailable', `${what}: ${message}`);
}
