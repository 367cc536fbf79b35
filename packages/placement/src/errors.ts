// The one error class of @everdict/placement and of every driver: a stable `code` from a closed list.
// Input that does not parse is not a placement outcome: the boundary parsers throw zod's ZodError for it
// (a caller's bug, the same on every driver), so the ten codes below stay exactly the driver outcomes.

export const PLACEMENT_ERROR_CODES = [
  'image_not_found', // the image reference names nothing this driver can run
  'timeout', // a wall timeout (the exec's, or the sandbox's deadline) or the CPU-time limit ran out
  'output_capped', // output passed the cap and the caller asked for the command to be stopped there
  'oom', // the sandbox's memory limit was hit and the kernel killed a process of the command
  'pids_exhausted', // a fork was refused because the sandbox's pid limit was reached
  'gone', // the handle no longer exists (disposed, reaped, or never provisioned here)
  'capacity', // no slot is free
  'spawn_failed', // the sandbox or the command could not be started
  'snapshot_mismatch', // snapshot bytes do not hash to the address they were offered under
  'unsupported', // this driver lacks the capability (see describe().capabilities)
] as const;

export type PlacementErrorCode = (typeof PLACEMENT_ERROR_CODES)[number];

// One HTTP status per code, for hosts that surface driver outcomes over HTTP (the house statuses:
// 404 not found, 413 too large, 422 valid but not placeable/executable here, 429 caps, 503 dependency down).
const STATUS: Record<PlacementErrorCode, number> = {
  image_not_found: 422,
  timeout: 422,
  output_capped: 413,
  oom: 422,
  pids_exhausted: 422,
  gone: 404,
  capacity: 429,
  spawn_failed: 503,
  snapshot_mismatch: 409,
  unsupported: 422,
};

export class PlacementError extends Error {
  readonly code: PlacementErrorCode;
  readonly httpStatus: number;
  /** What was observed when the error happened (for example the partial output of a capped exec). */
  readonly detail: Readonly<Record<string, unknown>>;

  constructor(code: PlacementErrorCode, message: string, detail: Record<string, unknown> = {}) {
    super(message);
    this.name = 'PlacementError';
    this.code = code;
    this.httpStatus = STATUS[code];
    this.detail = detail;
  }
}

export function isPlacementError(e: unknown, code?: PlacementErrorCode): e is PlacementError {
  return e instanceof PlacementError && (code === undefined || e.code === code);
}

/**
 * The `spawn_failed` of a program the sandbox could not execute — none by that name (127) or not executable
 * (126), the numbers a shell reports — in `detail.exitCode`. Unlike a sandbox that could not start, it is the
 * command's own end: the same argv in the same image fails the same way on any host, every time.
 */
export function programNotStarted(
  message: string,
  exitCode: ProgramExitCode,
  detail: Record<string, unknown> = {},
): PlacementError {
  return new PlacementError('spawn_failed', message, { ...detail, exitCode });
}

/**
 * The codes of a command stopped at a limit of its sandbox (its timeout or deadline, memory, pids, output cap):
 * the command's end, observed — its partial result, when it has one, in `detail.result`.
 */
export const LIMIT_STOP_CODES = ['timeout', 'oom', 'pids_exhausted', 'output_capped'] as const;

/** A `PlacementError` whose code is one of `LIMIT_STOP_CODES`. */
export type LimitStop = PlacementError & { readonly code: (typeof LIMIT_STOP_CODES)[number] };

/** Whether `e` is a command's stop at a limit of its sandbox (`LIMIT_STOP_CODES`). */
export function isLimitStop(e: unknown): e is LimitStop {
  return isPlacementError(e) && (LIMIT_STOP_CODES as readonly string[]).includes(e.code);
}

/** A shell's exit codes for a program it could not run: 126 not executable, 127 not found. */
export type ProgramExitCode = 126 | 127;

/** `programNotStarted`'s exit code when `e` is one (a `spawn_failed` naming 126 or 127); else undefined. */
export function programExitOf(e: unknown): ProgramExitCode | undefined {
  if (!isPlacementError(e, 'spawn_failed')) return undefined;
  const code = e.detail.exitCode;
  return code === 126 || code === 127 ? code : undefined;
}

export function httpStatusOf(code: PlacementErrorCode): number {
  return STATUS[code];
}

/** The refusal of a driver lacking an optional operation. */
export function unsupported(driver: string, operation: string): PlacementError {
  return new PlacementError('unsupported', `the ${driver} driver does not support ${operation}`, {
    driver,
    operation,
  });
}
