// Running commands in a sandbox: one-shot exec (captured, capped output) and a bidirectional stream.
import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';
import { Bytes, Env, MAX_WALL_TIMEOUT_MS } from './spec.js';

/** An argv: the program and its arguments, no shell unless the caller runs one. */
export const Command = z
  .array(z.string().refine((s) => !s.includes('\0'), 'no NUL in an argument'))
  .min(1)
  .refine((argv) => argv[0] !== '', 'the program is not empty');
export type Command = z.infer<typeof Command>;

export const DEFAULT_OUTPUT_CAP_BYTES = 1024 * 1024;

/** Where a command runs: absolute inside the sandbox, or relative to the workspace. */
const Cwd = z
  .string()
  .min(1)
  .max(4096)
  .refine((s) => !s.includes('\0'));

export const ExecOptions = z.strictObject({
  stdin: z.union([z.string(), Bytes]).optional(),
  /** Wall timeout of this command (never past the sandbox's deadline). Reaching it is `timeout`. */
  timeoutMs: z.int().positive().max(MAX_WALL_TIMEOUT_MS).optional(),
  /** Bytes kept of each of stdout and stderr. */
  outputCapBytes: z.int().nonnegative().default(DEFAULT_OUTPUT_CAP_BYTES),
  /** Past the cap: keep running and drop the rest (`truncated: true`), or stop the command (`output_capped`). */
  onOutputCap: z.enum(['truncate', 'kill']).default('truncate'),
  env: Env.default({}),
  cwd: Cwd.optional(),
});
export type ExecOptions = z.output<typeof ExecOptions>;
export type ExecOptionsInput = z.input<typeof ExecOptions>;

export const ExecTiming = z.strictObject({
  startedAtMs: z.number().nonnegative(),
  endedAtMs: z.number().nonnegative(),
  wallMs: z.number().nonnegative(),
});
export type ExecTiming = z.infer<typeof ExecTiming>;

/**
 * A finished command. A non-zero exit is a result, not an error. `signal` names the signal that ended
 * it, if one did. `truncated` is true when either stream passed the cap (the kept bytes are its prefix).
 */
export const ExecResult = z.strictObject({
  exitCode: z.int(),
  signal: z.string().nullable(),
  stdout: Bytes,
  stderr: Bytes,
  truncated: z.boolean(),
  timing: ExecTiming,
});
export type ExecResult = z.infer<typeof ExecResult>;

export const TerminalSize = z.strictObject({
  cols: z.int().positive().max(10_000),
  rows: z.int().positive().max(10_000),
});
export type TerminalSize = z.infer<typeof TerminalSize>;

export const StreamOptions = z.strictObject({
  env: Env.default({}),
  cwd: Cwd.optional(),
  /** Ask for a pseudo-terminal. A driver whose capabilities say `pty: false` refuses with `unsupported`. */
  tty: z.boolean().default(false),
  /** The initial terminal size (a pty driver applies it; every driver exports COLUMNS/LINES). */
  size: TerminalSize.optional(),
});
export type StreamOptions = z.output<typeof StreamOptions>;
export type StreamOptionsInput = z.input<typeof StreamOptions>;

export interface StreamExit {
  /** The exit code, or null when a signal ended the command. */
  readonly exitCode: number | null;
  readonly signal: string | null;
}

/**
 * A live command: write its stdin, read its stdout/stderr, resize its terminal, learn how it ended.
 * `exit` resolves once the command has ended and both output streams have ended; it rejects only with a
 * PlacementError (`timeout` past the sandbox's deadline, `oom`, `pids_exhausted`, `gone` if disposed).
 */
export interface ExecStream {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Whether the command has a pseudo-terminal (then stderr is merged into stdout and stays empty). */
  readonly pty: boolean;
  /** Resize the terminal. On a stream without a pty this is a no-op that returns false. */
  resize(size: TerminalSize): boolean;
  /** Stop the command (SIGKILL to everything it started). Idempotent. */
  kill(): void;
  readonly exit: Promise<StreamExit>;
}

export const LogOptions = z.strictObject({
  /** Keep yielding what later commands print until the sandbox is disposed or `signal` aborts. */
  follow: z.boolean().default(false),
  signal: z.instanceof(AbortSignal).optional(),
});
export type LogOptions = z.output<typeof LogOptions>;
export type LogOptionsInput = z.input<typeof LogOptions>;

export function parseCommand(cmd: unknown): Command {
  return Command.parse(cmd);
}
