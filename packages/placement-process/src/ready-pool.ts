// Ready scaffolds: a few sandboxes' directories made ahead, so `provision` writes a label file and a few
// limits instead of making directories. Each scaffold is a fresh, empty workspace (the sandbox user's,
// 0700) and fresh cgroups no process has ever joined (no limits yet: a sandbox's limits are its spec's),
// made off the event loop between provisions. Fresh, not reused: a v1 memory cgroup keeps charges after
// its tasks are gone (≥ 8 KiB of kernel memory even after `memory.force_empty`, README), so a reused one
// would not measure its sandbox's peak exactly; a fresh one does, as before.
//
// Why ahead: a cgroup mkdir (and rmdir) takes the kernel's cgroup_mutex, which every command's join holds
// while it waits for an RCU grace period — under the runner's load ≈ 6–27 ms per provision, synchronous on
// the driver's thread (README, Figures). Made here, that wait falls on a thread-pool thread, off the
// provision's path.
//
// A scaffold is named `pool-<owner pid>-<owner start time>-<n>-<state tag>` (its workspace under
// <stateDir>/workspaces, its cgroups under each hierarchy's parent): a crash leaves names that say whose
// they were, and `reap` removes those of a dead owner that no label file took (`orphanScaffolds`). On a
// normal exit the process removes its own (an `exit` hook, synchronous: empty directories). A provision that
// takes one renames its workspace to a random name (a command reads it in /proc/self/mountinfo).
import { readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { chown, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { killAndRemove } from './limits/cgroup-fs.js';
import type { LimitBackend } from './limits/limits.js';
import { currentOwner, type Owner, ownerAlive } from './sandbox-state.js';

export const SCAFFOLD_PREFIX = 'pool-';

/** A scaffold made ahead: its name (the sandbox's cgroup name), workspace and the cgroups made. */
export interface Scaffold {
  readonly name: string;
  readonly workspace: string;
  readonly cgroups: readonly string[];
}

export interface ReadyPoolOptions {
  readonly size: number;
  readonly workspaces: string;
  readonly backend: LimitBackend;
  /** The state directory's tag: cgroup names of two state directories never meet. */
  readonly tag: string;
  readonly user: { readonly uid: number; readonly gid: number } | null;
}

/** Every pool of this process, emptied by one `exit` hook. */
const live = new Set<ReadyPool>();
let hooked = false;

export class ReadyPool {
  private readonly ready: Scaffold[] = [];
  private making = 0;
  private seq = 0;
  /** Set after a scaffold could not be made (an unwritable hierarchy): provision makes its own. */
  private broken = false;
  private drained = false;
  private swept = false;

  constructor(private readonly options: ReadyPoolOptions) {}

  /** A scaffold, if one is ready; starts making more up to the pool's size either way. */
  take(): Scaffold | undefined {
    const scaffold = this.ready.shift();
    this.fill();
    return scaffold;
  }

  /** Scaffolds ready now (tests). */
  get size(): number {
    return this.ready.length;
  }

  /** Resolves once the pool is full (or can not be filled): tests. */
  async filled(): Promise<void> {
    this.fill();
    while (this.making > 0) await new Promise((r) => setImmediate(r));
  }

  /** Makes scaffolds until `size` are ready or under way (the first time: sweeps dead owners' first). */
  fill(): void {
    if (!this.swept) {
      this.swept = true;
      // A tick later: not on the first provision's path (a few rmdirs after a crash, usually none).
      setImmediate(() => {
        try {
          sweepScaffoldCgroups(this.options.backend);
        } catch {
          // an unreadable hierarchy: nothing to sweep
        }
      });
    }
    while (!this.broken && !this.drained && this.ready.length + this.making < this.options.size) {
      this.making += 1;
      this.make().then(
        (s) => {
          this.making -= 1;
          // drained while it was being made: not kept
          if (this.drained) void removeScaffold(this.options.backend, s.name, s.workspace);
          else {
            this.ready.push(s);
            this.hook();
          }
        },
        () => {
          this.making -= 1;
          this.broken = true;
        },
      );
    }
  }

  private async make(): Promise<Scaffold> {
    const { pid, startTime } = currentOwner();
    const name = `${SCAFFOLD_PREFIX}${pid}-${startTime}-${this.seq++}-${this.options.tag}`;
    const workspace = join(this.options.workspaces, name);
    // The workspace first, the cgroups after: a crash in between leaves a workspace, which reap finds.
    await mkdir(workspace, { mode: 0o700 });
    try {
      if (this.options.user) await chown(workspace, this.options.user.uid, this.options.user.gid);
      return { name, workspace, cgroups: await this.options.backend.prepare(name) };
    } catch (e) {
      await removeScaffold(this.options.backend, name, workspace);
      throw e;
    }
  }

  private hook(): void {
    live.add(this);
    if (hooked) return;
    hooked = true;
    process.once('exit', () => {
      for (const pool of live) pool.drainSync();
    });
  }

  /** Removes every ready scaffold now (empty directories: synchronous), and makes no more. */
  drainSync(): void {
    this.drained = true;
    live.delete(this);
    for (const s of this.ready.splice(0)) {
      for (const dir of s.cgroups) tryRmdir(dir);
      tryRmdir(s.workspace);
    }
  }
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // gone already, or not empty: reap finds it
  }
}

/**
 * Removes the cgroups of scaffolds whose owner died without its `exit` hook (kill -9: a crashed runner, a
 * test's killed child) and that no sandbox took, for any state directory: their workspaces went with their
 * state directory or go with `reap`, but the cgroups live on the host. Untaken is read from the cgroup: a
 * taken scaffold's `pids.max` holds its sandbox's limit, an untaken one's the kernel's default `max` (a
 * sandbox is limited before any of its commands runs). Returns how many.
 */
export function sweepScaffoldCgroups(backend: LimitBackend): number {
  const probe = backend.plan(`${SCAFFOLD_PREFIX}probe`, {});
  if (probe.length === 0) return 0;
  let names: string[];
  try {
    names = readdirSync(dirname(probe[0]!));
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const owner = scaffoldOwner(name);
    if (owner === null || ownerAlive(owner)) continue;
    const dirs = backend.plan(name, {});
    const limited = dirs.some((dir) => {
      try {
        return readFileSync(`${dir}/pids.max`, 'utf8').trim() !== 'max';
      } catch {
        return false; // not the pids cgroup (v1), or gone
      }
    });
    if (limited) continue;
    for (const dir of dirs) tryRmdir(dir);
    removed += 1;
  }
  return removed;
}

/** Removes a scaffold's cgroups, then its workspace. */
async function removeScaffold(backend: LimitBackend, name: string, workspace: string): Promise<void> {
  for (const dir of backend.plan(name, {})) await killAndRemove(dir).catch(() => false);
  await rm(workspace, { recursive: true, force: true });
}

/** The owner a scaffold's name records, or null for a name that is not a scaffold's. */
export function scaffoldOwner(name: string): Owner | null {
  const m = /^pool-(\d+)-(\d+)-\d+-[0-9a-f]+$/.exec(name);
  return m ? { pid: Number(m[1]), startTime: m[2]! } : null;
}

/**
 * Removes the scaffolds a dead owner left (made ahead, never taken by a sandbox: no label file names
 * their workspace). Returns how many.
 */
export async function reapScaffolds(
  backend: LimitBackend,
  workspaces: string,
  taken: ReadonlySet<string>,
): Promise<number> {
  let names: string[];
  try {
    names = readdirSync(workspaces);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const owner = scaffoldOwner(name);
    const workspace = join(workspaces, name);
    if (owner === null || taken.has(workspace) || ownerAlive(owner)) continue;
    await removeScaffold(backend, name, workspace);
    removed += 1;
  }
  return removed;
}
