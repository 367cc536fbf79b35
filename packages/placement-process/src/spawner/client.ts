// The driver's side of the spawner: one small long-lived process per driver, started on the first
// command and again after it died, that starts bubblewrap on request and hands the child's pipes back over
// Node's IPC channel (SCM_RIGHTS), so the driver reads and writes them itself — streaming and back-pressure
// as with a child of its own. A spawner that dies fails the commands it had started (their sandboxes die
// with it: --die-with-parent) instead of leaving them hanging. Two programs, one protocol: the native one
// (native/spawner.c, built by native.ts when a C compiler is present; the default) and the Node one
// (script.ts; without a compiler, or `program: 'node'`).
import { type ChildProcess, spawn } from 'node:child_process';
import { Socket } from 'node:net';
import type { CgroupHierarchy } from '../limits/limits.js';
import { buildNativeSpawner } from './native.js';
import { SPAWNER_SCRIPT } from './script.js';

/** What to start: the whole argv, its environment and user, and the hold-and-join of cgroups. */
export interface SpawnRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly user: { readonly uid: number; readonly gid: number } | null;
  /**
   * `cgroup.procs` files bubblewrap's own pid is written into before it may make its namespaces: it reads
   * its options from fd 6 (`fdArgs`, required with `join`) to their end, and that end comes only once it
   * joined. Its namespace init (its clone) is then born in the sandbox's cgroups, and so is the cgroup
   * namespace made with it — rooted at the sandbox's own cgroup, so /proc/self/cgroup in the sandbox shows
   * `/`, not the cgroup's host path (README, "What a command sees of the host's layout"). The init is held
   * (bubblewrap's --json-status-fd 3 --block-fd 4) until bubblewrap was moved back out (`leave`). Null: no
   * hold.
   */
  readonly join: readonly string[] | null;
  /**
   * With `join`: the `cgroup.procs` bubblewrap is moved back to once its init exists (the spawner's own).
   * Best-effort: a file that cannot be written (the spawner's cgroup outside a delegated subtree) is a
   * `warning` and the command runs, bubblewrap staying in the sandbox's cgroups until it exits.
   */
  readonly leave: readonly string[] | null;
  /**
   * Fd 3 is bubblewrap's --json-status-fd: read to its end, and the `exit-code` it reports (only for a
   * command bubblewrap exec'd) sent with the exit as `status` — the exit waits for that end.
   */
  readonly status: boolean;
  /** A socket the command reads (and answers on) as fd 5. */
  readonly control: boolean;
  /**
   * Whether the driver writes the command's stdin. False (an exec with no input): the spawner keeps fd 0's
   * socket and closes its end at once — the command reads end-of-file, as from a pipe the driver ended —
   * and sends no descriptor for it (one IPC message, acknowledgement and socket fewer per command).
   */
  readonly stdin: boolean;
  /** With `join`: the hierarchy the spawner warms the attach lock through (script.ts); null: none. */
  readonly warm: CgroupHierarchy | null;
  /**
   * Arguments the process reads from fd 6 (bubblewrap's `--args 6`), each NUL-terminated: not in its argv,
   * which every host user and the sandbox's own processes read (the namespace init, pid 1, is a copy of
   * bubblewrap). Absent or null: no fd 6.
   */
  readonly fdArgs?: readonly string[] | null;
}

/** The descriptor SpawnRequest.fdArgs are read from. */
export const ARGS_FD = 6;

/** SpawnRequest.fdArgs as the bytes written to fd 6: each argument NUL-terminated (none holds one: holdsNul). */
export function fdArgsBytes(args: readonly string[]): Buffer {
  return Buffer.from(args.map((a) => `${a}\0`).join(''));
}

/** Events of one started process, in the order the spawner sends them. */
export interface SpawnEvents {
  pid(pid: number): void;
  pipe(fd: number, stream: Socket): void;
  init(pid: number): void;
  /** Bubblewrap could not be moved back into `leave` (SpawnRequest.leave); the command runs all the same. */
  warning(message: string): void;
  failed(message: string): void;
  /** `status`: bubblewrap's `exit-code` on fd 3 (SpawnRequest.status); null when none came. */
  exit(code: number | null, signal: string | null, status: number | null): void;
  /** The spawner died before the process's exit was reported. */
  lost(): void;
}

/** What the spawner sends (script.ts, native/spawner.c). */
export type SpawnerMessage =
  | { readonly t: 'pid'; readonly id: number; readonly pid: number }
  | { readonly t: 'init'; readonly id: number; readonly pid: number }
  | { readonly t: 'fd'; readonly id: number; readonly i: 0 | 1 | 2 | 5 }
  | { readonly t: 'failed'; readonly id: number; readonly message: string }
  | { readonly t: 'warning'; readonly id: number; readonly message: string }
  | {
      readonly t: 'exit';
      readonly id: number;
      readonly code: number | null;
      readonly signal: string | null;
      readonly status: number | null;
    };

const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isPid = (v: unknown): v is number => isInt(v) && v > 0;
const isIntOrNull = (v: unknown): boolean => v === null || isInt(v);
const isStringOrNull = (v: unknown): boolean => v === null || typeof v === 'string';

/**
 * A spawner message checked as it arrives, or null: the same checks a zod schema made (integer ids and codes,
 * positive pids, fd 0, 1, 2 or 5, strings; other keys ignored), by hand — five messages a command, on the
 * driver's thread, where zod's generic walk was ≈ 5 % of its samples (README, Figures).
 */
export function spawnerMessage(raw: unknown): SpawnerMessage | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const m = raw as Record<string, unknown>;
  if (!isInt(m.id)) return null;
  switch (m.t) {
    case 'pid':
    case 'init':
      return isPid(m.pid) ? (m as SpawnerMessage) : null;
    case 'fd':
      return m.i === 0 || m.i === 1 || m.i === 2 || m.i === 5 ? (m as SpawnerMessage) : null;
    case 'failed':
    case 'warning':
      return typeof m.message === 'string' ? (m as SpawnerMessage) : null;
    case 'exit':
      return isIntOrNull(m.code) && isStringOrNull(m.signal) && isIntOrNull(m.status)
        ? (m as SpawnerMessage)
        : null;
    default:
      return null;
  }
}

/** Node flags of the spawner: a small heap, so its fork copies little; no V8 worker threads. */
const SPAWNER_FLAGS = ['--max-old-space-size=16', '--max-semi-space-size=1', '--single-threaded'];

export interface SpawnerOptions {
  /** `auto`: the native spawner when it can be built (into `dir`), else the Node one; `node`: the Node one. */
  readonly program: 'auto' | 'node';
  /** Where the native spawner is built and kept (the driver's `<stateDir>/bin`). */
  readonly dir: string;
}

export class Spawner {
  private child: ChildProcess | null = null;
  private readonly waiting = new Map<number, SpawnEvents>();
  private nextId = 1;
  /** The native program's path, null for the Node one; undefined until known (built or not). */
  private native: string | null | undefined;
  private queued: (() => void)[] = [];

  constructor(private readonly options: SpawnerOptions = { program: 'node', dir: '' }) {
    if (options.program === 'node') this.native = null;
  }

  /** Asks the spawner to start a process; its events arrive on `events`. */
  start(request: SpawnRequest, events: SpawnEvents): void {
    const id = this.nextId++;
    this.waiting.set(id, events);
    this.whenKnown(() => {
      const native = this.native ?? null;
      const message =
        holdsNul(request) || (request.join !== null && !request.fdArgs)
          ? null
          : native === null
            ? nodeMessage(id, request)
            : nativeMessage(id, request);
      if (message === null) {
        // A NUL byte would shift the native spawner's fields; child_process refuses it too (the Node
        // spawner's spawn throws). Refused here for both, failed and ended as a spawn that failed. A join
        // needs fd 6 (SpawnRequest.join): without it bubblewrap could clone before it joined.
        this.waiting.delete(id);
        events.failed(
          holdsNul(request)
            ? 'an argument, a variable or a path holds a NUL byte'
            : 'a cgroup join needs the options on fd 6',
        );
        events.exit(null, null, null);
        return;
      }
      const child = this.running(native);
      child.channel?.ref();
      child.send(message);
    });
  }

  /** The spawner's pid (tests), or null when none runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Which program runs (or will run) the spawner; null until that is known (the first build). */
  get program(): 'native' | 'node' | null {
    return this.native === undefined ? null : this.native === null ? 'node' : 'native';
  }

  /** Runs `then` once the program is known: the first call builds (or finds) the native one. */
  private whenKnown(then: () => void): void {
    if (this.native !== undefined) {
      then();
      return;
    }
    this.queued.push(then);
    if (this.queued.length > 1) return;
    void buildNativeSpawner(this.options.dir).then((path) => {
      this.native = path;
      const queued = this.queued;
      this.queued = [];
      for (const f of queued) f();
    });
  }

  /** Stops the spawner; the commands it started fail (and their sandboxes die with it). */
  stop(): void {
    this.child?.kill('SIGKILL');
  }

  private running(native: string | null): ChildProcess {
    if (this.child) return this.child;
    const [file, args] =
      native === null ? [process.execPath, [...SPAWNER_FLAGS, '-e', SPAWNER_SCRIPT]] : [native, []];
    const child = spawn(file, args, {
      // Not the driver's NODE_OPTIONS (a profiler hook, --require …): the spawner loads nothing else.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      // Its own session: a signal to the driver's process group (^C, a supervisor's or CI's group kill)
      // does not reach it, so it outlives the driver, sees the channel end and kills what it started.
      detached: true,
      // The Node program's stdin: a pipe only this process holds, whose end it reads as the driver's death
      // (script.ts: its 'disconnect' can fail to come).
      stdio: [native === null ? 'pipe' : 'ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    child.unref();
    child.channel?.unref();
    child.stdin?.on('error', () => undefined);
    (child.stdin as Socket | null)?.unref();
    child.on('message', (m: unknown, handle?: unknown) => this.receive(m, handle));
    child.on('error', () => undefined);
    child.once('exit', () => this.died(child));
    return child;
  }

  private receive(raw: unknown, handle: unknown): void {
    const m = spawnerMessage(raw);
    const events = m === null ? undefined : this.waiting.get(m.id);
    if (m === null || !events) {
      if (handle) new Socket({ handle } as ConstructorParameters<typeof Socket>[0]).destroy();
      return;
    }
    if (m.t === 'pid') events.pid(m.pid);
    else if (m.t === 'init') events.init(m.pid);
    else if (m.t === 'fd') events.pipe(m.i, pipeSocket(handle, m.i));
    else if (m.t === 'failed') events.failed(m.message);
    else if (m.t === 'warning') events.warning(m.message);
    else {
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) this.child?.channel?.unref();
      events.exit(m.code, m.signal, m.status);
    }
  }

  private died(child: ChildProcess): void {
    if (this.child === child) this.child = null;
    const lost = [...this.waiting.values()];
    this.waiting.clear();
    for (const events of lost) events.lost();
  }
}

/**
 * Whether a string of the request holds a NUL byte (no exec could pass it; in `fdArgs` it would split one
 * argument into two — an option of bubblewrap's made from a variable's value).
 */
export function holdsNul(request: SpawnRequest): boolean {
  const strings = [
    request.file,
    ...request.args,
    ...Object.entries(request.env).flat(),
    ...(request.join ?? []),
    ...(request.leave ?? []),
    ...(request.fdArgs ?? []),
    request.warm?.mount ?? '',
    request.warm?.controller ?? '',
  ];
  return strings.some((s) => s.includes('\0'));
}

/** The Node spawner's request (script.ts). */
function nodeMessage(id: number, request: SpawnRequest): object {
  return {
    t: 'spawn',
    id,
    file: request.file,
    args: request.args,
    env: request.env,
    ...(request.user ? { uid: request.user.uid, gid: request.user.gid } : {}),
    join: request.join,
    leave: request.leave ?? [],
    status: request.status,
    control: request.control,
    stdin: request.stdin,
    warm: request.warm,
    fdArgs: request.fdArgs ?? null,
  };
}

/**
 * The native spawner's request (native/spawner.c): NUL-terminated fields in base64, so its side needs no
 * JSON string decoding — id, flags, uid, gid, file, then counted lists of args, `K=V` env, join files and
 * leave files, then the warm hierarchy, then (flag `a`) the counted list of fd 6's arguments (holdsNul: none holds a NUL
 * byte).
 */
function nativeMessage(id: number, request: SpawnRequest): object {
  const flags =
    (request.join !== null ? 'h' : '') +
    (request.status ? 's' : '') +
    (request.control ? 'c' : '') +
    (request.warm ? 'w' : '') +
    (request.user ? 'u' : '') +
    (request.stdin ? '' : 'e') +
    (request.fdArgs ? 'a' : '');
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const join = request.join ?? [];
  const leave = request.leave ?? [];
  const fields = [
    String(id),
    flags,
    String(request.user?.uid ?? ''),
    String(request.user?.gid ?? ''),
    request.file,
    String(request.args.length),
    ...request.args,
    String(env.length),
    ...env,
    String(join.length),
    ...join,
    String(leave.length),
    ...leave,
    request.warm?.mount ?? '',
    request.warm?.controller ?? '',
    ...(request.fdArgs ? [String(request.fdArgs.length), ...request.fdArgs] : []),
  ];
  return { t: 'spawn', b: Buffer.from(`${fields.join('\0')}\0`).toString('base64') };
}

/** A received pipe handle as a stream: fd 0 is written to, 1 and 2 read, 5 both (resizes out, acknowledgements in). */
function pipeSocket(handle: unknown, fd: number): Socket {
  const readable = fd !== 0;
  const writable = fd === 0 || fd === 5;
  // `handle` is the Pipe wrap Node made for the received descriptor; net.Socket takes it as it is.
  return new Socket({ handle, readable, writable } as ConstructorParameters<typeof Socket>[0]);
}
