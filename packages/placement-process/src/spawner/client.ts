// The driver's side of the spawner (script.ts): one small long-lived Node process per driver, started on
// the first command and again after it died, that starts bubblewrap on request and hands the child's
// pipes back over the IPC channel (SCM_RIGHTS), so the driver reads and writes them itself — streaming
// and back-pressure as with a child of its own. A spawner that dies fails the commands it had started
// (their sandboxes die with it: --die-with-parent) instead of leaving them hanging.
import { type ChildProcess, spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { z } from 'zod';
import type { CgroupHierarchy } from '../limits/limits.js';
import { SPAWNER_SCRIPT } from './script.js';

/** What to start: the whole argv, its environment and user, and the hold-and-join of cgroups. */
export interface SpawnRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly user: { readonly uid: number; readonly gid: number } | null;
  /** `cgroup.procs` files the namespace init is written into before it runs; null: no hold. */
  readonly join: readonly string[] | null;
  /** A socket the command reads (and answers on) as fd 5. */
  readonly control: boolean;
  /** With `join`: the hierarchy the spawner warms the attach lock through (script.ts); null: none. */
  readonly warm: CgroupHierarchy | null;
}

/** Events of one started process, in the order the spawner sends them. */
export interface SpawnEvents {
  pid(pid: number): void;
  pipe(fd: number, stream: Socket): void;
  init(pid: number): void;
  failed(message: string): void;
  exit(code: number | null, signal: string | null): void;
  /** The spawner died before the process's exit was reported. */
  lost(): void;
}

/** What the spawner sends (script.ts), checked as it arrives. */
const SpawnerMessage = z.discriminatedUnion('t', [
  z.object({ t: z.literal('pid'), id: z.int(), pid: z.int().positive() }),
  z.object({ t: z.literal('init'), id: z.int(), pid: z.int().positive() }),
  z.object({
    t: z.literal('fd'),
    id: z.int(),
    i: z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(5)]),
  }),
  z.object({ t: z.literal('failed'), id: z.int(), message: z.string() }),
  z.object({ t: z.literal('exit'), id: z.int(), code: z.int().nullable(), signal: z.string().nullable() }),
]);

/** Node flags of the spawner: a small heap, so its fork copies little; no V8 worker threads. */
const SPAWNER_FLAGS = ['--max-old-space-size=16', '--max-semi-space-size=1', '--single-threaded'];

export class Spawner {
  private child: ChildProcess | null = null;
  private readonly waiting = new Map<number, SpawnEvents>();
  private nextId = 1;

  /** Asks the spawner to start a process; its events arrive on `events`. */
  start(request: SpawnRequest, events: SpawnEvents): void {
    const child = this.running();
    const id = this.nextId++;
    this.waiting.set(id, events);
    child.channel?.ref();
    child.send({
      t: 'spawn',
      id,
      file: request.file,
      args: request.args,
      env: request.env,
      ...(request.user ? { uid: request.user.uid, gid: request.user.gid } : {}),
      join: request.join,
      control: request.control,
      warm: request.warm,
    });
  }

  /** The spawner's pid (tests), or null when none runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Stops the spawner; the commands it started fail (and their sandboxes die with it). */
  stop(): void {
    this.child?.kill('SIGKILL');
  }

  private running(): ChildProcess {
    if (this.child) return this.child;
    const child = spawn(process.execPath, [...SPAWNER_FLAGS, '-e', SPAWNER_SCRIPT], {
      // Not the driver's NODE_OPTIONS (a profiler hook, --require …): the spawner loads nothing else.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    child.unref();
    child.channel?.unref();
    child.on('message', (m: unknown, handle?: unknown) => this.receive(m, handle));
    child.on('error', () => undefined);
    child.once('exit', () => this.died(child));
    return child;
  }

  private receive(raw: unknown, handle: unknown): void {
    const parsed = SpawnerMessage.safeParse(raw);
    const events = parsed.success ? this.waiting.get(parsed.data.id) : undefined;
    if (!parsed.success || !events) {
      if (handle) new Socket({ handle } as ConstructorParameters<typeof Socket>[0]).destroy();
      return;
    }
    const m = parsed.data;
    if (m.t === 'pid') events.pid(m.pid);
    else if (m.t === 'init') events.init(m.pid);
    else if (m.t === 'fd') events.pipe(m.i, pipeSocket(handle, m.i));
    else if (m.t === 'failed') events.failed(m.message);
    else {
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) this.child?.channel?.unref();
      events.exit(m.code, m.signal);
    }
  }

  private died(child: ChildProcess): void {
    if (this.child === child) this.child = null;
    const lost = [...this.waiting.values()];
    this.waiting.clear();
    for (const events of lost) events.lost();
  }
}

/** A received pipe handle as a stream: fd 0 is written to, 1 and 2 read, 5 both (resizes out, acknowledgements in). */
function pipeSocket(handle: unknown, fd: number): Socket {
  const readable = fd !== 0;
  const writable = fd === 0 || fd === 5;
  // `handle` is the Pipe wrap Node made for the received descriptor; net.Socket takes it as it is.
  return new Socket({ handle, readable, writable } as ConstructorParameters<typeof Socket>[0]);
}
