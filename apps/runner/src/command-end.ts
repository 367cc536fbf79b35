// How a command ended, as the interval records it: its exit code (a signal's as a shell counts it), or the
// driver's stop that ended it — a limit of its sandbox (the run's expiry among them: expiry.ts), or its program
// not started — and what the run's summary says of that stop.
import { constants as osConstants } from 'node:os';
import { PassThrough } from 'node:stream';
import { type ExecStream, isLimitStop, type PlacementError, programExitOf } from '@everdict/placement';
import { expiryOf } from './expiry.js';
import type { Lease } from './protocol.js';

/** The driver's stops at a limit of the sandbox: the command ended there (observed), its executor not lost. */

/**
 * How the command ended: its exit code (a signal's as 128 + its number) and, when the driver stopped it at a limit,
 * that stop (its exit code the driver's when it reports one, else a SIGKILL's); when its program could not be
 * started (`programExitOf`: none by that name, or not executable), that refusal, with a shell's 127 or 126.
 * Anything else — the sandbox's own failure — rejects.
 */
export async function commandEnd(
  exit: ExecStream['exit'],
): Promise<{ exitCode: number; stop?: PlacementError }> {
  try {
    const { exitCode, signal } = await exit;
    return { exitCode: exitCode ?? signalExit(signal) };
  } catch (err) {
    const program = programExitOf(err);
    if (program !== undefined) return { exitCode: program, stop: err as PlacementError };
    if (!isLimitStop(err)) throw err;
    const reported = err.detail.exitCode;
    return { exitCode: Number.isInteger(reported) ? (reported as number) : 128 + 9, stop: err };
  }
}

/**
 * A command a signal ended exits 128 + the signal's number, as a shell reports it: the signal the driver
 * observed (SIGTERM 143, SIGKILL 137), not a SIGKILL assumed for every one. One the driver did not name, or
 * this host does not know, counts as SIGKILL's.
 */
function signalExit(signal: string | null): number {
  const n = signal === null ? undefined : (osConstants.signals as Record<string, number | undefined>)[signal];
  return 128 + (n ?? 9);
}

/** A command the driver refused to start at its deadline: no output, and the refusal as how it ended. */
export function stoppedBeforeStart(stop: PlacementError): ExecStream {
  const ended = () => {
    const s = new PassThrough();
    s.end();
    return s;
  };
  const exit = Promise.reject(stop);
  exit.catch(() => undefined);
  return {
    stdin: new PassThrough(),
    stdout: ended(),
    stderr: ended(),
    pty: false,
    resize: () => false,
    kill: () => {},
    exit,
  };
}

/** What a stopped command's summary says: its program not started, its expiry, or the limit that stopped it. */
export function stopSummary(stop: PlacementError, lease: Pick<Lease, 'spec'>): string {
  if (stop.code === 'spawn_failed') return `its program could not be started: ${stop.message}`;
  const at = expiryOf(lease);
  if (stop.code === 'timeout' && stop.detail.bound === 'deadline' && at !== undefined)
    return `its TTL ran out (expiresAt ${new Date(at).toISOString()}): ${stop.message}`;
  return `stopped at a limit of its sandbox (${stop.code}): ${stop.message}`;
}
