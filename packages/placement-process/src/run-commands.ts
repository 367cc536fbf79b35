// exec and stream on a held sandbox: environment, budget, output capture (capped, and teed into the
// sandbox's log), a pseudo-terminal for `tty` streams (pty.ts), and the translation of how a command ended into a result or a PlacementError.
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CappedOutput,
  Command,
  commandBudget,
  ExecOptions,
  type ExecOptionsInput,
  type ExecResult,
  type ExecStream,
  PlacementError,
  type StreamExit,
  StreamOptions,
  type StreamOptionsInput,
  TerminalSize,
  toBytes,
  unsupported,
} from '@everdict/placement';
import { DEFAULT_PATH, WORKSPACE } from './bwrap-args.js';
import type { Sandbox } from './process-driver.js';
import { DEFAULT_TERMINAL_SIZE, ptyArgv, ptyToolsIn } from './pty.js';
import { PtyInput } from './pty-input.js';
import { bwrapFailure, type CommandSetup, SandboxCommand, stopError } from './sandbox-command.js';

function commandEnv(box: Sandbox, extra: Record<string, string>): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: WORKSPACE, ...box.record.env, ...extra };
}

function gone(box: Sandbox): PlacementError {
  return new PlacementError('gone', `sandbox ${box.record.handle.id} was disposed`, {
    id: box.record.handle.id,
  });
}

/**
 * After a command was stopped (killed), waits (bounded) until its processes have left the sandbox's
 * cgroups when it was the sandbox's only command: the pipes close as the namespace's processes exit, a
 * moment before the kernel takes them out of the cgroup.
 */
async function drained(box: Sandbox): Promise<void> {
  if (!box.limits.joinsByPid) return;
  for (let round = 0; round < 200 && box.running.size === 0; round++) {
    if ((await box.limits.processes()).length === 0) return;
    await sleep(5);
  }
}

export async function execIn(
  box: Sandbox,
  setup: CommandSetup,
  cmd: Command,
  input: ExecOptionsInput,
): Promise<ExecResult> {
  const argv = Command.parse(cmd);
  const opts = ExecOptions.parse(input);
  const budget = commandBudget(box.record.handle, opts.timeoutMs);
  const before = await box.limits.counters();
  if (box.disposed) throw gone(box);
  const startedAtMs = Date.now();
  const stdinBytes = Buffer.from(toBytes(opts.stdin));
  const c = await SandboxCommand.start(
    setup,
    argv,
    commandEnv(box, opts.env),
    opts.cwd,
    budget,
    before,
    false,
    stdinBytes.length > 0,
  );
  box.running.add(c);
  if (box.disposed) c.kill({ kind: 'gone' }); // disposed while it started
  const stdout = new CappedOutput(opts.outputCapBytes);
  const stderr = new CappedOutput(opts.outputCapBytes);
  const capture = (out: CappedOutput) => (chunk: Buffer) => {
    box.log.append(chunk);
    if (out.push(chunk) && opts.onOutputCap === 'kill') c.kill({ kind: 'output_capped' });
  };
  c.stdout.on('data', capture(stdout));
  c.stderr.on('data', capture(stderr));
  c.stdin.end(stdinBytes);
  const exit = await c.exited;
  box.running.delete(c);
  if (exit.stop) await drained(box);
  const endedAtMs = Date.now();
  const result: ExecResult = {
    exitCode: exit.exitCode ?? 128 + signalNumber(exit.signal),
    signal: exit.signal,
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    truncated: stdout.truncated || stderr.truncated,
    timing: { startedAtMs, endedAtMs, wallMs: endedAtMs - startedAtMs },
  };
  if (c.failedToSpawn) {
    throw new PlacementError('spawn_failed', `could not start the sandbox: ${c.failedToSpawn.message}`, {
      command: argv[0],
    });
  }
  if (box.disposed) throw gone(box);
  if (exit.stop) throw stopError(exit.stop, budget, { result });
  const after = await box.limits.counters();
  if (after.oomKills > before.oomKills) throw stopError({ kind: 'oom' }, budget, { result });
  if (after.pidsRefused > before.pidsRefused) throw stopError({ kind: 'pids_exhausted' }, budget, { result });
  const failure = bwrapFailure(exit.exitCode, result.stderr);
  if (failure) throw new PlacementError('spawn_failed', failure, { command: argv[0] });
  return result;
}

export async function streamIn(
  box: Sandbox,
  setup: CommandSetup,
  cmd: Command,
  input: StreamOptionsInput,
): Promise<ExecStream> {
  const argv = Command.parse(cmd);
  const opts = StreamOptions.parse(input);
  if (opts.tty && !(await ptyToolsIn(box.record.imageRoot ?? '/'))) {
    throw unsupported(
      'process',
      `a pseudo-terminal in image ${box.record.handle.environment.image} (it needs script, sh and stty)`,
    );
  }
  const budget = commandBudget(box.record.handle, undefined);
  const before = await box.limits.counters();
  if (box.disposed) throw gone(box);
  const size: Record<string, string> = opts.size
    ? { COLUMNS: String(opts.size.cols), LINES: String(opts.size.rows) }
    : {};
  const env = commandEnv(box, { ...size, ...opts.env });
  const run = opts.tty ? ptyArgv(argv, opts.size ?? DEFAULT_TERMINAL_SIZE, env.SHELL) : argv;
  const c = await SandboxCommand.start(
    setup,
    run,
    opts.tty ? { ...env, SHELL: '/bin/sh' } : env,
    opts.cwd,
    budget,
    before,
    opts.tty,
  );
  box.running.add(c);
  if (box.disposed) c.kill({ kind: 'gone' }); // disposed while it started
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let stderrHead = Buffer.alloc(0);
  c.stdout.on('data', (chunk: Buffer) => box.log.append(chunk));
  c.stderr.on('data', (chunk: Buffer) => {
    box.log.append(chunk);
    if (stderrHead.length < 512) stderrHead = Buffer.concat([stderrHead, chunk]);
  });
  c.stdout.pipe(stdout);
  c.stderr.pipe(stderr);
  let ended = false;
  const exit: Promise<StreamExit> = c.exited.then(async (e) => {
    ended = true;
    box.running.delete(c);
    if (e.stop) await drained(box);
    if (c.failedToSpawn)
      throw new PlacementError('spawn_failed', c.failedToSpawn.message, { command: argv[0] });
    if (box.disposed) throw gone(box);
    if (e.stop && e.stop.kind !== 'killed') throw stopError(e.stop, budget, {});
    const after = await box.limits.counters();
    if (after.oomKills > before.oomKills) throw stopError({ kind: 'oom' }, budget, {});
    if (after.pidsRefused > before.pidsRefused) throw stopError({ kind: 'pids_exhausted' }, budget, {});
    const failure = bwrapFailure(e.exitCode, stderrHead);
    if (failure) throw new PlacementError('spawn_failed', failure, { command: argv[0] });
    return { exitCode: e.exitCode, signal: e.signal };
  });
  exit.catch(() => undefined);
  // a pty's stdin and resizes reach the command in the order they were asked for (pty-input.ts)
  const ptyInput = opts.tty && c.control !== null ? new PtyInput(c.stdin, c.control) : null;
  return {
    stdin: ptyInput?.stdin ?? c.stdin,
    stdout,
    stderr,
    pty: opts.tty,
    resize: (size) => {
      const next = TerminalSize.parse(size);
      if (ptyInput === null || ended) return false;
      return ptyInput.resize(next);
    },
    kill: () => c.kill({ kind: 'killed' }),
    exit,
  };
}

const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};

function signalNumber(signal: string | null): number {
  return signal === null ? 0 : (SIGNALS[signal] ?? 0);
}
