// Starting one bubblewrap process, two ways behind one shape: through the driver's spawner (a small
// long-lived process, spawner/), or inline with child_process.spawn from the driver's own process. Either
// way the driver gets the child's pipes as streams of its own, its pid, the namespace init's pid once it
// exists in the sandbox's cgroups and bubblewrap was moved back out (SpawnRequest.join), `exited`
// (the process was reaped; with the command's exit status as bubblewrap reported it on --json-status-fd)
// and `closed`: it exited and its stdout and stderr were read to the end (child_process's 'close'). A kill
// after the reap sends nothing: both pids may belong to someone else by then (the kernel hands out freed
// pids again, and pid_max is 32768 on many hosts).
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { Duplex, PassThrough, type Readable, Writable } from 'node:stream';
import type { SandboxLimits } from './limits/limits.js';
import { ARGS_FD, fdArgsBytes, type Spawner, type SpawnRequest } from './spawner/client.js';

export interface ProcessEnd {
  readonly code: number | null;
  readonly signal: string | null;
  /**
   * With `SpawnRequest.status`: the `exit-code` bubblewrap wrote on its --json-status-fd (fd 3) — it does
   * only for a command it exec'd —; null when none came (bubblewrap failed, or was killed) or not asked.
   */
  readonly status: number | null;
}

export interface Launch {
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Our end of the command's fd 5 (a socket: written to, and read for acknowledgements), when asked for. */
  readonly control: Duplex | null;
  /** The process was reaped; its pipes may still hold output a slow reader has not taken. */
  readonly exited: Promise<ProcessEnd>;
  readonly closed: Promise<ProcessEnd>;
  /** Why it could not start, or could not be moved into its cgroups (then it was killed). */
  error(): Error | null;
  /** The namespace init's pid once it joined the cgroups; null before (or without a hold). */
  nsInit(): number | null;
  /**
   * SIGKILLs the process's group and the namespace init: those known now, and through the spawner each one as
   * it becomes known (its pid can arrive after the pipes, so a kill just after the start is not lost).
   * Nothing once the process was reaped: the namespace init died before it (bubblewrap waits for its
   * child), and a freed pid can be another process's already.
   */
  kill(): void;
}

/** SIGKILL to each target known (a negative pid: a process group); one already gone is no error. */
function killTargets(pid: number | undefined, init: number | null): void {
  for (const target of [pid === undefined ? null : -pid, init]) {
    if (target === null) continue;
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

const ended = (): Readable => {
  const s = new PassThrough();
  s.end();
  return s;
};
const sink = (): Writable => new Writable({ write: (_c, _e, done) => done() });
const silent = (): Duplex => new Duplex({ read: () => undefined, write: (_c, _e, done) => done() });

/** When `stream` has closed (at once for a stream already destroyed). */
function closedOf(stream: Readable): Promise<void> {
  if (stream.destroyed || stream.closed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

/**
 * What could not be done and was let go: bubblewrap not moved back into `leave` (SpawnRequest.leave, the
 * spawner's or this process's own cgroups) — it stays in the sandbox's cgroups until it exits.
 */
export type LaunchWarning = (message: string) => void;

/** Starts the process through the spawner; resolves once its pipes are here (or it failed). */
export function launchViaSpawner(
  spawner: Spawner,
  request: SpawnRequest,
  warn: LaunchWarning = () => undefined,
): Promise<Launch> {
  return new Promise((resolve) => {
    let pid: number | undefined;
    let init: number | null = null;
    let killed = false;
    /** Reaped (the spawner reported its exit) or lost with the spawner: its pids are not ours to signal. */
    let reaped = false;
    let error: Error | null = null;
    let end: ((e: ProcessEnd) => void) | undefined;
    const exited = new Promise<ProcessEnd>((r) => {
      end = r;
    });
    const pipes = new Map<number, Socket>();
    const wanted = (request.stdin ? 1 : 0) + 2 + (request.control ? 1 : 0);
    let launched: Launch | undefined;
    const ready = () => {
      if (launched) return;
      const stdout = pipes.get(1) ?? ended();
      const stderr = pipes.get(2) ?? ended();
      const control = request.control ? (pipes.get(5) ?? silent()) : null;
      control?.on('error', () => undefined);
      const stdin = pipes.get(0) ?? sink(); // none asked for (request.stdin false), or it failed
      stdin.on('error', () => undefined); // EPIPE when the command does not read its stdin
      launched = {
        get pid() {
          return pid;
        },
        stdin,
        stdout,
        stderr,
        control,
        exited,
        closed: Promise.all([exited, closedOf(stdout), closedOf(stderr)]).then(([e]) => e),
        error: () => error,
        nsInit: () => init,
        kill: () => {
          killed = true;
          if (!reaped) killTargets(pid, init);
        },
      };
      resolve(launched);
    };
    spawner.start(request, {
      pid: (p) => {
        pid = p;
        if (killed && !reaped) killTargets(p, null);
      },
      pipe: (fd, socket) => {
        pipes.set(fd, socket);
        if (pipes.size === wanted) ready();
      },
      init: (p) => {
        init = p;
        if (killed && !reaped) killTargets(undefined, p);
      },
      warning: warn,
      failed: (message) => {
        error ??= new Error(message);
        ready();
      },
      exit: (code, signal, status) => {
        reaped = true;
        ready();
        end?.({ code, signal, status });
      },
      lost: () => {
        // bubblewrap's --die-with-parent takes the outer bubblewrap with the spawner, but the namespace
        // init can outlive it: kill what is known here, stop reading, and report the command failed
        // (dispose kills whatever is left in the sandbox's cgroups).
        error ??= new Error('the spawner process exited');
        killTargets(pid, init); // its exit was not reported (that ends the wait): not reaped by it
        reaped = true;
        ready();
        for (const p of pipes.values()) p.destroy();
        end?.({ code: null, signal: 'SIGKILL', status: null });
      },
    });
  });
}

/**
 * Bubblewrap's --json-status-fd as it arrives: one JSON object a line, `child-pid` first (the namespace init,
 * just made), `exit-code` last (the command's status, written only for a command bubblewrap exec'd).
 * Read to its end: a closed reader would kill bubblewrap with SIGPIPE.
 */
class StatusLines {
  private text = '';
  childPid: number | null = null;
  exitCode: number | null = null;

  /** Takes a chunk; true when it completed the `child-pid` line. */
  push(chunk: string): boolean {
    this.text += chunk;
    let found = false;
    for (let nl = this.text.indexOf('\n'); nl !== -1; nl = this.text.indexOf('\n')) {
      const line = this.text.slice(0, nl);
      this.text = this.text.slice(nl + 1);
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(line);
      if (pid && this.childPid === null) {
        this.childPid = Number(pid[1]);
        found = true;
      }
      const code = /"exit-code"\s*:\s*(-?\d+)/.exec(line);
      if (code) this.exitCode = Number(code[1]);
    }
    if (this.text.length > 4096) this.text = ''; // not bubblewrap's lines
    return found;
  }
}

/**
 * Inline launches not yet reaped: SIGKILLed (group and namespace init) when this process or thread exits —
 * bubblewrap's --die-with-parent, set only after its clone, misses the ones still starting, and a held
 * namespace init reads end-of-file on --block-fd as "go" (README, "The owner's death"). A SIGKILL of this
 * process runs no hook: the spawner (`spawner: 'process'`) covers that, inline does not.
 */
const inlineLive = new Set<() => void>();
let inlineHooked = false;

function killOnExit(kill: () => void): () => void {
  inlineLive.add(kill);
  if (!inlineHooked) {
    inlineHooked = true;
    process.once('exit', () => {
      for (const k of inlineLive) k();
    });
  }
  return () => inlineLive.delete(kill);
}

/**
 * Starts the process with child_process.spawn here (the driver's own fork), joining and holding inline
 * (SpawnRequest.join: bubblewrap is moved into `cgroups` before fd 6 ends — fatal if it cannot be — and out
 * once its init exists: best-effort, a failed move out is `warn`ed and the command runs).
 */
export function launchInline(
  request: SpawnRequest,
  cgroups: Pick<SandboxLimits, 'join' | 'leave'>,
  warn: LaunchWarning = () => undefined,
): Launch {
  const hold = request.join !== null;
  const statusFd = hold || request.status;
  const fdArgs = request.fdArgs ?? null;
  // a NUL byte would split an argument in two on fd 6: refused as child_process refuses one in argv
  if (fdArgs?.some((a) => a.includes('\0')))
    throw new TypeError('an argument, a variable or a path holds a NUL byte');
  if (hold && !fdArgs) throw new TypeError('a cgroup join needs the options on fd 6');
  const fds: ('pipe' | 'ignore')[] = [
    'pipe',
    'pipe',
    'pipe',
    ...(statusFd ? (['pipe'] as const) : request.control ? (['ignore'] as const) : []),
    ...(hold ? (['pipe'] as const) : request.control ? (['ignore'] as const) : []),
    ...(request.control ? (['pipe'] as const) : []),
  ];
  if (fdArgs) {
    while (fds.length < ARGS_FD) fds.push('ignore');
    fds.push('pipe');
  }
  const child = spawn(request.file, request.args, {
    detached: true,
    env: request.env,
    stdio: fds,
    ...(request.user ?? {}),
  });
  const pipes = child.stdio as unknown as readonly (Writable | Readable | null | undefined)[];
  const argsPipe = fdArgs ? ((pipes[ARGS_FD] as Writable | null | undefined) ?? null) : null;
  let error: Error | null = null;
  if (hold && child.pid !== undefined) {
    // Before bubblewrap has its options' end, so before its clone (synchronous: it cannot be there yet).
    try {
      cgroups.join(child.pid);
    } catch (e) {
      error = e as Error;
      killTargets(child.pid, null);
    }
  }
  if (fdArgs && argsPipe) {
    // bubblewrap reads it to its end (--args): written, then our end closed
    argsPipe.on('error', () => undefined);
    if (error === null) argsPipe.end(fdArgsBytes(fdArgs), () => argsPipe.destroy());
    else argsPipe.destroy();
  }
  let init: number | null = null;
  const lines = new StatusLines();
  // (not started — no pid, no 'exit' to come — nothing to kill)
  if (child.pid !== undefined)
    child.once(
      'exit',
      killOnExit(() => killTargets(child.pid, init ?? lines.childPid)),
    );
  const stdio = child.stdio as unknown as readonly (Writable | Readable | null)[];
  const info = statusFd ? (stdio[3] as Readable | null) : null;
  // The status is complete once fd 3 reached its end (bubblewrap's exit closes it), which may come after 'exit'.
  const statusRead = info ? closedOf(info) : Promise.resolve();
  const exited = new Promise<ProcessEnd>((resolve) =>
    child.once('exit', (code, signal) =>
      statusRead.then(() => resolve({ code, signal, status: lines.exitCode })),
    ),
  );
  child.on('error', (e) => {
    error = e;
  });
  child.stdin!.on('error', () => undefined);
  const control = request.control ? (stdio[5] as Duplex) : null;
  control?.on('error', () => undefined);
  const release = hold ? (stdio[4] as Writable) : null;
  release?.on('error', () => undefined);
  info?.on('error', () => undefined);
  info?.on('data', (chunk: Buffer) => {
    if (!lines.push(chunk.toString('utf8')) || release === null) return;
    const nsInit = lines.childPid!;
    // Its init is in the cgroups (born there): bubblewrap itself goes back. Best-effort (SpawnRequest.leave);
    // ESRCH: bubblewrap is gone already (its own failure, told by its status), nothing to move.
    const failed = cgroups.leave(child.pid!).find((e) => (e as NodeJS.ErrnoException).code !== 'ESRCH');
    if (failed) warn(`leave ${failed.message}`);
    init = nsInit;
    release.end('1');
    // Keep reading to the end: the command's exit status comes last.
  });
  return {
    pid: child.pid,
    stdin: child.stdin!,
    stdout: child.stdout!,
    stderr: child.stderr!,
    control,
    exited,
    // 'close' comes once every pipe of the child ended, fd 3 included: its status lines are all read
    closed: new Promise((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal, status: lines.exitCode })),
    ),
    error: () => error,
    nsInit: () => init,
    kill: () => {
      // Node sets one of the two as it reaps the child
      if (child.exitCode === null && child.signalCode === null) killTargets(child.pid, init);
    },
  };
}
