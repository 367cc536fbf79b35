// exec and stream on a held sandbox: environment, budget, output capture (capped, and teed into the
// sandbox's log), a pseudo-terminal for `tty` streams (pty.ts), and the translation of how a command ended into a result or a PlacementError.
import { PassThrough } from 'node:stream';
import {
  CappedOutput,
  Command,
  type CommandBudget,
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
import type { Sandbox } from './held-sandbox.js';
import { finished } from './limits/cgroup-fs.js';
import type { LimitCounters } from './limits/limits.js';
import { DEFAULT_TERMINAL_SIZE, ptyArgv, ptyToolsIn } from './pty.js';
import { PtyInput } from './pty-input.js';
import {
  bwrapFailure,
  type CommandSetup,
  SandboxCommand,
  type StopReason,
  stopError,
} from './sandbox-command.js';

function commandEnv(box: Sandbox, extra: Record<string, string>): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: WORKSPACE, ...box.record.env, ...extra };
}

function gone(box: Sandbox): PlacementError {
  return new PlacementError('gone', `sandbox ${box.record.handle.id} was disposed`, {
    id: box.record.handle.id,
  });
}

/** How long a command's end waits for its processes to leave the sandbox's cgroups (`settled`). */
export const SETTLE_TIMEOUT_MS = 1000;

/**
 * Waits (bounded: SETTLE_TIMEOUT_MS) until the sandbox's cgroups hold no task, when no other command runs
 * there. A command's exit is reported once its namespace init saw it end; what it left in its pid namespace
 * is killed after, as the init exits (and a stopped command's processes leave a moment after its pipes
 * closed), all CPU time charged to the sandbox. Waited for where the usage is read — a stopped command,
 * a command's end under `cpuTimeMs`, `usage()` — so that reading is final. With other commands running,
 * not waited for: their processes cannot be told apart from its own, and the usage is live anyway.
 */
export async function settled(box: Sandbox): Promise<void> {
  if (!box.limits.joinsByPid || box.running.size > 0) return;
  const inits = [...box.ending];
  if (await box.limits.settle(SETTLE_TIMEOUT_MS, inits)) for (const pid of inits) box.ending.delete(pid);
}

/** A command of `box` has ended: its namespace init is one `settled` waits for. */
function ended(box: Sandbox, c: SandboxCommand): void {
  box.running.delete(c);
  const init = c.nsInit;
  if (init === null || !box.limits.joinsByPid) return;
  box.ending.add(init);
  // never settled while other commands keep running: those already finished are let go
  if (box.ending.size > 64) for (const pid of box.ending) if (finished(pid)) box.ending.delete(pid);
}

/**
 * The memory or pids limit the command ran into (its counters moved since `before`), once whatever it left in
 * the sandbox is gone: a command that ended by itself before the watcher saw the limit (a fork bomb whose shell
 * gave up) was not stopped, so nothing had waited for its namespace's other processes — the kernel kills them
 * when the namespace's init exits, but they were still in the cgroup when the refusal was answered.
 */
async function limitHit(box: Sandbox, before: LimitCounters): Promise<StopReason | null> {
  const after = await box.limits.counters();
  const hit: StopReason | null =
    after.oomKills > before.oomKills
      ? { kind: 'oom' }
      : after.pidsRefused > before.pidsRefused
        ? { kind: 'pids_exhausted' }
        : null;
  if (hit) await settled(box);
  return hit;
}

/**
 * Whether the sandbox's CPU time is used up (`limits.cpuTimeMs` reached, by every command so far). The watcher
 * only polls while a command runs (`cpuPollMs`): without this a command that crossed the limit between two
 * polls, or any command shorter than a poll, ran and answered as if there were no limit.
 */
async function cpuUsedUp(box: Sandbox): Promise<StopReason | null> {
  const limitMs = box.record.handle.limits.cpuTimeMs;
  if (limitMs === undefined) return null;
  const used = (await box.limits.usage()).cpuTimeMs;
  return used !== null && used >= limitMs ? { kind: 'timeout', bound: 'cpu', limitMs } : null;
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
  const cpuBefore = await cpuUsedUp(box);
  if (cpuBefore) throw stopError(cpuBefore, budget, {});
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
  ended(box, c);
  if (exit.stop || box.record.handle.limits.cpuTimeMs !== undefined) await settled(box);
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
  const limit = await limitHit(box, before);
  if (limit) throw stopError(limit, budget, { result });
  const cpu = await cpuUsedUp(box);
  if (cpu) throw stopError(cpu, budget, { result });
  const failure = bwrapFailure(exit, result.stderr, argv[0]);
  if (failure) throw failure;
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
  const cpuBefore = await cpuUsedUp(box);
  if (cpuBefore) throw stopError(cpuBefore, budget, {});
  const size: Record<string, string> = opts.size
    ? { COLUMNS: String(opts.size.cols), LINES: String(opts.size.rows) }
    : {};
  const env = commandEnv(box, { ...size, ...opts.env });
  if (!opts.tty && setup.spawner !== null)
    return startLater(box, [setup, argv, env, opts.cwd, budget, before]);
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
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let ended = false;
  const exit = attach(box, c, argv, budget, before, stdout, stderr, () => {
    ended = true;
  });
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

/** `SandboxCommand.start`'s arguments (its two switches, a control pipe and a stdin descriptor, are decided here). */
type StartArgs = Parameters<typeof SandboxCommand.start>;

/**
 * A stream without a terminal, through the spawner: answered at once, the command started a turn later
 * (setImmediate). Its stdin is ours until then: a caller that ended it without writing anything (the
 * runner's `stream.stdin.end()` right after the stream opened) gets a command started without a stdin
 * descriptor (it reads end-of-file, as from an ended pipe: SpawnRequest.stdin) — one IPC message,
 * handle acknowledgement and net.Socket fewer per command; anything written, or a stdin still open then,
 * is piped into the command's as before. A kill before the start kills it as it starts.
 */
function startLater(box: Sandbox, command: StartArgs): ExecStream {
  const [setup, argv, env, cwd, budget, before] = command;
  const stdin = new PassThrough();
  stdin.on('error', () => undefined);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let started: SandboxCommand | null = null;
  let killed = false;
  /** Decided as the command starts: whether the caller's stdin goes to it (false: ended or destroyed empty). */
  let piped = false;
  const exit = new Promise<SandboxCommand>((resolve, reject) => {
    setImmediate(() => {
      if (box.disposed) return reject(gone(box));
      piped = !(stdin.destroyed || (stdin.writableEnded && stdin.readableLength === 0));
      SandboxCommand.start(setup, argv, env, cwd, budget, before, false, piped).then(resolve, reject);
    });
  }).then(
    (c) => {
      started = c;
      if (killed) c.kill({ kind: 'killed' });
      // A stdin destroyed (now or later) ends the command's: a pipe ends it only on a normal end.
      const destroyed = () => {
        if (!c.stdin.writableEnded) c.stdin.end();
      };
      if (piped && stdin.destroyed) destroyed();
      else if (piped) {
        stdin.pipe(c.stdin);
        stdin.once('close', destroyed);
      }
      return attach(box, c, argv, budget, before, stdout, stderr, () => undefined);
    },
    (e: unknown) => {
      stdout.end();
      stderr.end();
      throw e;
    },
  );
  exit.catch(() => undefined);
  return {
    stdin,
    stdout,
    stderr,
    pty: false,
    resize: (size) => {
      TerminalSize.parse(size);
      return false;
    },
    kill: () => {
      killed = true;
      started?.kill({ kind: 'killed' });
    },
    exit,
  };
}

/**
 * A started stream command's output teed into the sandbox's log and the caller's `stdout`/`stderr`, and how
 * it ended, as a StreamExit or a PlacementError.
 */
function attach(
  box: Sandbox,
  c: SandboxCommand,
  argv: readonly string[],
  budget: CommandBudget,
  before: LimitCounters,
  stdout: PassThrough,
  stderr: PassThrough,
  /** Called as soon as the command has ended (before the exit's own checks). */
  onEnded: () => void,
): Promise<StreamExit> {
  box.running.add(c);
  if (box.disposed) c.kill({ kind: 'gone' }); // disposed while it started
  let stderrHead = Buffer.alloc(0);
  c.stdout.on('data', (chunk: Buffer) => box.log.append(chunk));
  c.stderr.on('data', (chunk: Buffer) => {
    box.log.append(chunk);
    if (stderrHead.length < 512) stderrHead = Buffer.concat([stderrHead, chunk]);
  });
  c.stdout.pipe(stdout);
  c.stderr.pipe(stderr);
  const exit: Promise<StreamExit> = c.exited.then(async (e) => {
    onEnded();
    ended(box, c);
    if (e.stop || box.record.handle.limits.cpuTimeMs !== undefined) await settled(box);
    if (c.failedToSpawn)
      throw new PlacementError('spawn_failed', c.failedToSpawn.message, { command: argv[0] });
    if (box.disposed) throw gone(box);
    if (e.stop && e.stop.kind !== 'killed') throw stopError(e.stop, budget, {});
    const limit = await limitHit(box, before);
    if (limit) throw stopError(limit, budget, {});
    const cpu = await cpuUsedUp(box);
    if (cpu) throw stopError(cpu, budget, {});
    const failure = bwrapFailure(e, stderrHead, argv[0]);
    if (failure) throw failure;
    return { exitCode: e.exitCode, signal: e.signal };
  });
  exit.catch(() => undefined);
  return exit;
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
