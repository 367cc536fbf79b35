// Commands in a sandbox pod over the exec channel: one-shot exec (capped output, timeout, the sandbox's
// deadline), live streams for terminals, and the driver's own unwrapped commands (snapshot, restore, kill).
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import {
  CappedOutput,
  type CommandBudget,
  commandBudget,
  type ExecOptions,
  type ExecResult,
  type ExecStream,
  PlacementError,
  programNotStarted,
  type SandboxHandle,
  type StreamExit,
  type StreamOptions,
  timeoutError,
  toBytes,
  utf8,
  type WorkspaceArchive,
} from '@everdict/placement';
import type { KubeConfig, V1Status } from '@kubernetes/client-node';
import {
  type ChannelProtocol,
  type ExecChannel,
  exitCodeOf,
  openExec,
  UpgradeRefused,
  V4,
} from './exec-channel.js';
import { CONTAINER, killCommand, NOT_FOUND_MARKER, wrapCommand } from './sandbox-scripts.js';

const MAX_TIMER_MS = 2 ** 31 - 1;
/** The most of a stream's stderr kept to recognise the wrapper's "not found" line (which is far shorter). */
const STDERR_HEAD_BYTES = 4096;

/** setTimeout for any delay: Node fires a timer of more than 2^31 − 1 ms at once, so long ones re-arm. */
function after(ms: number, fn: () => void): { clear(): void } {
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(
      left > MAX_TIMER_MS ? () => arm(left - MAX_TIMER_MS) : fn,
      Math.min(left, MAX_TIMER_MS),
    );
  };
  arm(ms);
  return { clear: () => clearTimeout(timer) };
}

export interface SandboxTarget {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  handle: SandboxHandle;
  /** The deadline of the exec WebSocket handshake. */
  requestTimeoutMs: number;
  /** The deadline of each of the driver's own execs (`runInternal`), handshake to final status. */
  internalExecTimeoutMs: number;
  /** The protocol that worked before (v5 is tried first when unknown). */
  protocol: ChannelProtocol | undefined;
  learned(protocol: ChannelProtocol): void;
  /** Why the pod cannot run commands now (gone, deadline, oom), if it cannot. */
  failure(): PlacementError | undefined;
  /** Resolves once the pod status shows the container ended (or the settle time passed). */
  settled(): Promise<void>;
}

/** Open an exec channel in the sandbox container; a refusal is the PlacementError it means. */
export async function openChannel(
  target: SandboxTarget,
  command: (p: ChannelProtocol) => string[],
  stdin: boolean,
  tty: boolean,
): Promise<ExecChannel> {
  try {
    const channel = await openExec(
      target.kc,
      { namespace: target.namespace, pod: target.pod, container: CONTAINER, command, stdin, tty },
      target.requestTimeoutMs,
      target.protocol,
    );
    target.learned(channel.protocol);
    return channel;
  } catch (error) {
    const known = target.failure();
    if (known) throw known;
    if (error instanceof UpgradeRefused && (error.statusCode === 404 || error.statusCode === 400)) {
      throw new PlacementError('gone', `the sandbox pod cannot run commands: ${error.message}`, {
        pod: target.pod,
      });
    }
    throw new PlacementError('spawn_failed', `exec could not connect: ${(error as Error).message}`, {
      pod: target.pod,
    });
  }
}

/** The outcome of a final status: an exit code, or the PlacementError it means. */
function outcome(target: SandboxTarget, status: V1Status | null, stderr: Uint8Array): number {
  if (status === null) {
    throw (
      target.failure() ??
      new PlacementError('spawn_failed', 'the exec connection ended without a status', { pod: target.pod })
    );
  }
  const code = exitCodeOf(status);
  if (code === undefined)
    throw new PlacementError('spawn_failed', status.message ?? 'exec failed', { reason: status.reason });
  const err = utf8(stderr);
  if (code === 127 && err.startsWith(NOT_FOUND_MARKER) && err.indexOf('\n') === err.length - 1) {
    throw programNotStarted(err.trim(), 127, { pod: target.pod });
  }
  if (code === 137) {
    const failure = target.failure();
    if (failure?.code === 'oom') throw failure;
  }
  return code;
}

/**
 * `outcome`, after waiting for the pod status when the command was killed (137) or its connection ended
 * without a status: the exec sees the OOM kill (or eviction) before the kubelet's status update says so.
 */
export async function settledOutcome(
  target: SandboxTarget,
  status: V1Status | null,
  stderr: Uint8Array,
): Promise<number> {
  if (status === null || exitCodeOf(status) === 137) await target.settled();
  return outcome(target, status, stderr);
}

/** The `detail.reason` of an internal exec that passed `internalExecTimeoutMs`. */
export const INTERNAL_EXEC_TIMEOUT = 'internal_exec_timeout';

/**
 * Run one of the driver's own commands (not wrapped, not logged) and collect its output. The whole exec,
 * handshake to final status, has `internalExecTimeoutMs`: a node that accepted the exec and never answers
 * (no frame, no status, the connection alive) fails it with `spawn_failed` and the connection is cut.
 */
export async function runInternal(
  target: SandboxTarget,
  command: string[],
  stdin: Uint8Array | undefined,
  capBytes: number,
) {
  const stdout = new CappedOutput(capBytes);
  const stderr = new CappedOutput(64 * 1024);
  let channel: ExecChannel | undefined;
  let expired = false;
  const exchange = async () => {
    const opened = await openChannel(target, () => command, stdin !== undefined, false);
    channel = opened;
    if (expired) opened.terminate();
    opened.stdout.on('data', (d: Buffer) => stdout.push(d));
    opened.stderr.on('data', (d: Buffer) => stderr.push(d));
    if (stdin !== undefined) {
      opened.write(stdin);
      opened.closeStdin();
    }
    return opened.status;
  };
  let timer: { clear(): void } | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = after(target.internalExecTimeoutMs, () => {
      expired = true;
      channel?.terminate();
      reject(
        new PlacementError(
          'spawn_failed',
          `the driver's exec of ${command[0] ?? 'a command'} got no final status in ${target.internalExecTimeoutMs} ms`,
          { pod: target.pod, reason: INTERNAL_EXEC_TIMEOUT, timeoutMs: target.internalExecTimeoutMs },
        ),
      );
    });
  });
  const exchanged = exchange();
  exchanged.catch(() => undefined); // after the deadline, a late refusal has no one to tell
  let status: V1Status | null;
  try {
    status = await Promise.race([exchanged, deadline]);
  } finally {
    timer?.clear();
  }
  return { exitCode: await settledOutcome(target, status, stderr.bytes()), stdout, stderr };
}

/**
 * Run one of the driver's own commands (not wrapped, not logged) and hand its stdout over as it arrives,
 * with back-pressure (the channel stops reading while stdout holds unread output). No deadline: the consumer
 * reads at its own pace and `stop` cuts the connection. `done` rejects with the PlacementError of a non-zero
 * exit (its stderr's first 2,000 characters as detail) or of a connection that ended without a status.
 */
export async function streamInternal(target: SandboxTarget, command: string[]): Promise<WorkspaceArchive> {
  const channel = await openChannel(target, () => command, false, false);
  const stderr = new CappedOutput(64 * 1024);
  channel.stderr.on('data', (d: Buffer) => stderr.push(d));
  let stopped = false;
  const done = channel.status.then(async (status) => {
    if (stopped) return;
    const code = await settledOutcome(target, status, stderr.bytes());
    if (code !== 0) {
      const err = utf8(stderr.bytes());
      const first = err.split('\n')[0]?.trim().slice(0, 300) ?? ''; // tar names what it could not read here
      throw new PlacementError(
        'spawn_failed',
        `${command[0] ?? 'a command'} exited ${code}${first ? `: ${first}` : ''}`,
        {
          exitCode: code,
          stderr: err.slice(0, 2000),
        },
      );
    }
  });
  return {
    stream: channel.stdout,
    done,
    stop() {
      stopped = true;
      channel.terminate();
    },
  };
}

function kill(target: SandboxTarget, execId: string): Promise<void> {
  return runInternal(target, killCommand(execId), undefined, 1024).then(
    () => undefined,
    () => undefined,
  );
}

export async function runCommand(
  target: SandboxTarget,
  argv: string[],
  options: ExecOptions,
): Promise<ExecResult> {
  const budget: CommandBudget = commandBudget(target.handle, options.timeoutMs);
  const execId = randomBytes(8).toString('hex');
  const stdin = options.stdin === undefined ? undefined : toBytes(options.stdin);
  const command = (p: ChannelProtocol) =>
    wrapCommand(argv, {
      execId,
      cwd: options.cwd,
      env: options.env,
      stdinBytes: p === V4 && stdin !== undefined ? stdin.byteLength : undefined,
      tty: false,
    });
  const startedAtMs = Date.now();
  const channel = await openChannel(target, command, stdin !== undefined, false);
  const stdout = new CappedOutput(options.outputCapBytes);
  const stderr = new CappedOutput(options.outputCapBytes);
  // what was observed so far (a stopped command has no exit code to report)
  const result = (): Omit<ExecResult, 'exitCode'> => {
    const endedAtMs = Date.now();
    return {
      signal: null,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      truncated: stdout.truncated || stderr.truncated,
      timing: { startedAtMs, endedAtMs, wallMs: endedAtMs - startedAtMs },
    };
  };
  return new Promise<ExecResult>((resolve, reject) => {
    let settled = false;
    const stop = (error: PlacementError) => {
      if (settled) return;
      settled = true;
      timer.clear();
      void kill(target, execId).then(() => channel.close());
      reject(error);
    };
    const timer = after(budget.ms, () => stop(timeoutError(budget, { result: result() })));
    const onData = (sink: CappedOutput) => (d: Buffer) => {
      if (sink.push(d) && options.onOutputCap === 'kill') {
        stop(
          new PlacementError('output_capped', `output passed ${options.outputCapBytes} bytes`, {
            result: result(),
          }),
        );
      }
    };
    channel.stdout.on('data', onData(stdout));
    channel.stderr.on('data', onData(stderr));
    if (stdin !== undefined) {
      channel.write(stdin);
      channel.closeStdin();
    }
    channel.status.then((status) => {
      if (settled) return;
      settled = true;
      timer.clear();
      // stopped by the pod's own deadline (activeDeadlineSeconds) a moment before our timer fired
      const code = status === null ? undefined : exitCodeOf(status);
      if (
        budget.bound === 'deadline' &&
        Date.now() >= target.handle.deadlineMs &&
        (code === undefined || code >= 128)
      ) {
        reject(timeoutError(budget, { result: result() }));
        return;
      }
      settledOutcome(target, status, stderr.bytes()).then(
        (exitCode) => resolve({ ...result(), exitCode }),
        reject,
      );
    });
  });
}

export async function startStream(
  target: SandboxTarget,
  argv: string[],
  options: StreamOptions,
  pty: boolean,
): Promise<ExecStream> {
  const budget = commandBudget(target.handle, undefined);
  const execId = randomBytes(8).toString('hex');
  const env = { ...options.env };
  if (options.size) {
    env.COLUMNS = String(options.size.cols);
    env.LINES = String(options.size.rows);
  }
  const tty = options.tty && pty;
  const channel = await openChannel(
    target,
    () => wrapCommand(argv, { execId, cwd: options.cwd, env, stdinBytes: undefined, tty }),
    true,
    tty,
  );
  if (tty && options.size) channel.resize(options.size.cols, options.size.rows);
  // What the command wrote on stderr, kept while it is short: the wrapper's "not found" line alone there
  // is a program that does not exist (spawn_failed 127, as `exec` refuses it), not a command that exits 127.
  const stderr = new PassThrough();
  const head = { bytes: Buffer.alloc(0), whole: true };
  if (!tty)
    channel.stderr.on('data', (chunk: Buffer) => {
      if (head.bytes.length + chunk.length <= STDERR_HEAD_BYTES)
        head.bytes = Buffer.concat([head.bytes, chunk]);
      else head.whole = false;
    });
  channel.stderr.pipe(stderr);
  let killed = false;
  let expired = false;
  const timer = after(budget.ms, () => {
    expired = true;
    void kill(target, execId).then(() => channel.close());
  });
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      channel.write(chunk);
      callback();
    },
    final(callback) {
      channel.closeStdin();
      callback();
    },
  });
  let ended = false;
  const exit: Promise<StreamExit> = channel.status.then(async (status) => {
    ended = true;
    timer.clear();
    if (expired) throw timeoutError(budget);
    if (killed) return { exitCode: null, signal: 'SIGKILL' };
    const stderrSeen = head.whole ? head.bytes : new Uint8Array();
    return { exitCode: await settledOutcome(target, status, stderrSeen), signal: null };
  });
  exit.catch(() => undefined);
  return {
    stdin,
    stdout: channel.stdout,
    stderr,
    pty: tty,
    resize: (size) => {
      if (!tty || ended) return false;
      channel.resize(size.cols, size.rows);
      return true;
    },
    kill: () => {
      if (killed) return;
      killed = true;
      void kill(target, execId).then(() => channel.close());
    },
    exit,
  };
}
