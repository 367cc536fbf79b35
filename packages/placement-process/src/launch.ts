// Starting one bubblewrap process, two ways behind one shape: through the driver's spawner (a small
// long-lived process, spawner/), or inline with child_process.spawn from the driver's own process. Either
// way the driver gets the child's pipes as streams of its own, its pid, the namespace init's pid once it
// has been moved into the sandbox's cgroups (held with --info-fd/--block-fd until then), `exited` (the
// process was reaped) and `closed`: it exited and its stdout and stderr were read to the end
// (child_process's 'close'). A kill after the reap sends nothing: both pids may belong to someone else by
// then (the kernel hands out freed pids again, and pid_max is 32768 on many hosts).
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { Duplex, PassThrough, type Readable, Writable } from 'node:stream';
import type { Spawner, SpawnRequest } from './spawner/client.js';

export interface ProcessEnd {
  readonly code: number | null;
  readonly signal: string | null;
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

/** Starts the process through the spawner; resolves once its pipes are here (or it failed). */
export function launchViaSpawner(spawner: Spawner, request: SpawnRequest): Promise<Launch> {
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
      failed: (message) => {
        error ??= new Error(message);
        ready();
      },
      exit: (code, signal) => {
        reaped = true;
        ready();
        end?.({ code, signal });
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
        end?.({ code: null, signal: 'SIGKILL' });
      },
    });
  });
}

/** Starts the process with child_process.spawn here (the driver's own fork), holding and joining inline. */
export function launchInline(request: SpawnRequest, join: (pid: number) => void): Launch {
  const hold = request.join !== null;
  const child = spawn(request.file, request.args, {
    detached: true,
    env: request.env,
    stdio: [
      'pipe',
      'pipe',
      'pipe',
      ...(hold ? (['pipe', 'pipe'] as const) : request.control ? (['ignore', 'ignore'] as const) : []),
      ...(request.control ? (['pipe'] as const) : []),
    ],
    ...(request.user ?? {}),
  });
  let error: Error | null = null;
  let init: number | null = null;
  const exited = new Promise<ProcessEnd>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.on('error', (e) => {
    error = e;
  });
  child.stdin!.on('error', () => undefined);
  const stdio = child.stdio as unknown as readonly (Writable | Readable | null)[];
  const control = request.control ? (stdio[5] as Duplex) : null;
  control?.on('error', () => undefined);
  if (hold) {
    const info = stdio[3] as Readable;
    const release = stdio[4] as Writable;
    release.on('error', () => undefined);
    info.on('error', () => undefined);
    let text = '';
    info.on('data', (chunk: Buffer) => {
      if (init !== null) return;
      text += chunk.toString('utf8');
      const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (!m) return;
      const nsInit = Number(m[1]);
      try {
        join(nsInit);
      } catch (e) {
        error = e as Error;
        killTargets(child.pid, nsInit);
        return;
      }
      init = nsInit;
      release.end('1');
      // Keep reading to the end: bubblewrap writes more (namespace ids) after the pid, and a closed
      // reader would kill it with SIGPIPE before it lets its child run.
    });
  }
  return {
    pid: child.pid,
    stdin: child.stdin!,
    stdout: child.stdout!,
    stderr: child.stderr!,
    control,
    exited,
    closed: new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal }))),
    error: () => error,
    nsInit: () => init,
    kill: () => {
      // Node sets one of the two as it reaps the child
      if (child.exitCode === null && child.signalCode === null) killTargets(child.pid, init);
    },
  };
}
