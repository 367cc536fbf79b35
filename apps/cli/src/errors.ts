// The one error of the CLI and the exit code each failure maps to: 0 ok, 1 the run failed, a sandbox exec
// exited non-zero or was stopped by a limit (`exec_stopped`), or a record did not verify, 2 usage,
// 3 refused (a 4xx problem), 4 unavailable (a 5xx, or no answer at all), 130 interrupted (Ctrl-C before
// what was waited for settled, or while a call was unanswered: nothing is claimed about how it ends).
import { ClientError } from '@everdict/client';
import type { ZodType } from 'zod';

export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3, unavailable: 4, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export type CliErrorCode =
  | 'run_failed'
  | 'exec_stopped'
  | 'not_verified'
  | 'usage'
  | 'refused'
  | 'unavailable'
  | 'interrupted';

const EXIT_OF: Record<CliErrorCode, ExitCode> = {
  run_failed: EXIT.failed,
  exec_stopped: EXIT.failed,
  not_verified: EXIT.failed,
  usage: EXIT.usage,
  refused: EXIT.refused,
  unavailable: EXIT.unavailable,
  interrupted: EXIT.interrupted,
};

export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly code: CliErrorCode,
    message: string,
  ) {
    super(message);
  }
  get exitCode(): ExitCode {
    return EXIT_OF[this.code];
  }
}

/** A ClientError's exit code: 4xx → 3 refused; 5xx and `network` (status 0) → 4 unavailable. */
export function exitOfClientError(e: ClientError): ExitCode {
  return e.status >= 400 && e.status < 500 ? EXIT.refused : EXIT.unavailable;
}

/**
 * One line saying why, for stderr: `refused 402 envelope_exhausted: …`. After Ctrl-C (`interrupted`), a
 * failure that is not an answer of the control plane (the call Ctrl-C aborted) is `interrupted` (130).
 */
export function describeError(e: unknown, interrupted = false): { line: string; exitCode: ExitCode } {
  if (e instanceof CliError) return { line: `${e.code}: ${e.message}`, exitCode: e.exitCode };
  if (interrupted && !(e instanceof ClientError && e.status > 0))
    return {
      line: 'interrupted: stopped before the control plane answered (nothing is claimed about the call)',
      exitCode: EXIT.interrupted,
    };
  if (e instanceof ClientError) {
    const exitCode = exitOfClientError(e);
    const what = exitCode === EXIT.refused ? 'refused' : 'unavailable';
    const rule = typeof e.problem?.rule === 'string' ? ` (rule ${e.problem.rule})` : '';
    return { line: `${what} ${e.status || '-'} ${e.code}${rule}: ${e.message}`, exitCode };
  }
  return { line: `unavailable: ${e instanceof Error ? e.message : String(e)}`, exitCode: EXIT.unavailable };
}

/**
 * An answer read as its documented schema — or `unavailable` (4) naming what was not: a control plane that
 * answers another shape than its document says is not one this CLI can read.
 */
export function documented<T>(schema: ZodType<T>, raw: unknown, what: string, shape: string): T {
  const r = schema.safeParse(raw);
  if (!r.success)
    throw new CliError('unavailable', `the ${what} answer is not the documented shape (${shape})`);
  return r.data;
}
