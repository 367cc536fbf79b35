// Removing a sandbox: what runs in its cgroups is killed and the cgroups removed, then its workspace and
// log, and its label file last — so a crash halfway through leaves a label file for `reap` to find.
import { type Dirent, existsSync, unlinkSync } from 'node:fs';
import { readdir, rmdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { removeTreeNoFollow } from '@everdict/placement';
import type { SandboxLimits } from './limits/limits.js';
import { removeRecord, type SandboxRecord, type StateLayout } from './sandbox-state.js';

/**
 * Removes a workspace whose entries are all empty directories (a command run's workspace: `out/` and
 * nothing in it): a readdir of `path` (the workspace itself: its parent is the driver's, no command can swap
 * it), an rmdir of each entry — rmdir follows no final symlink — then `path`'s rmdir. Never a deeper path: a
 * command may have swapped an entry for a symlink to a host directory, and a path through it is followed
 * (this walked down and removed empty host directories). False as soon as it meets anything else, or more
 * than `budget` entries — the caller then removes the rest without following symlinks (removeTreeNoFollow).
 *
 * Every call goes through the thread pool. These rmdirs were synchronous (a thread-pool trip costs two context
 * switches), but a sandbox's directories were bind-mounted into its namespaces, and their rmdir waits in the
 * kernel's mount handling (most likely on locks the other sandboxes' namespace setup and teardown take): 0.5–1.3 ms at the
 * median and 10–23 ms at p99 each (`out/` and the workspace, 16 sandboxes at a time; a 100 ms pause before
 * the dispose halves the median, not the p99). The runner's whole thread stood still meanwhile, 30 % of its
 * profile's samples under the runner bench.
 */
async function removeEmptyDirs(path: string, budget = 16): Promise<boolean> {
  let entries: Dirent[];
  try {
    entries = await readdir(path, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const e of entries) {
    if (!e.isDirectory() || --budget < 0) return false;
    try {
      await rmdir(join(path, e.name)); // the common case: `out/`, empty
    } catch {
      return false;
    }
  }
  try {
    await rmdir(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes a directory tree; an empty one (the common case) or one of a few empty directories with an rmdir
 * each, anything else with removeTreeNoFollow: never a path-based recursive removal (`fs.rm`), which follows
 * a directory a command still running (one that survived the kill, or a race with it) swaps for a symlink
 * to a host directory mid-walk, and deletes that directory's files as root
 * (`test/review2-dispose-nofollow.test.ts`). True when something was there and is gone now.
 */
export async function removeTree(path: string): Promise<boolean> {
  try {
    await rmdir(path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code === 'ENOTEMPTY' && (await removeEmptyDirs(path))) return true;
  }
  return removeTreeNoFollow(path);
}

/**
 * Removes what restores of the workspace left beside it (`.<workspace>.restore-*` half written by a process
 * that died, `.<workspace>.old-*` an old workspace a still-running command kept adding to), without following
 * symlinks: a command may still hold an old one bind-mounted. Returns how many went.
 */
export async function removeRestoreLeftovers(workspace: string): Promise<number> {
  const prefix = `.${basename(workspace)}.`;
  const parent = dirname(workspace);
  let count = 0;
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (name.startsWith(prefix) && (await removeTree(join(parent, name)))) count++;
  }
  return count;
}

export interface RemovalHints {
  /**
   * Also what restores left beside the workspace (removeRestoreLeftovers): `reap` (a crashed process's), and
   * `dispose` of a sandbox restored (or adopted: its history is another process's).
   */
  readonly leftovers?: boolean;
  /**
   * Directories the driver made in the workspace (ProvisionSpec.directories), parents first: removed
   * deepest first before the workspace — the common case (a command run's empty `out/`) without a failed
   * rmdir of the workspace and a listing of it. Any of them not empty leaves the rest to the walk.
   */
  readonly made?: readonly string[];
  /** False: this process wrote nothing to the sandbox's log (its existence is checked before the unlink). */
  readonly logWritten?: boolean;
}

/**
 * Removes the workspace's own entries among `made` (its direct children: `out`), deepest first, stopping at
 * the first that is there and cannot go (not empty, or no longer a directory: rmdir follows no final
 * symlink). Never a deeper path: a command may have swapped a parent for a symlink, and rmdir follows those.
 */
async function removeMadeDirectories(workspace: string, made: readonly string[]): Promise<void> {
  for (let i = made.length - 1; i >= 0; i--) {
    if (dirname(made[i]!) !== workspace) continue;
    try {
      await rmdir(made[i]!);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return;
    }
  }
}

/**
 * Removes everything of a sandbox and returns what was there: `cgroup:<controller>` (or `cgroup`),
 * `workspace`, `restore-leftover` (with `leftovers`: what restores left beside it), `log`, `label`.
 */
export async function removeSandbox(
  l: StateLayout,
  record: SandboxRecord,
  limits: SandboxLimits,
  options: RemovalHints = {},
): Promise<string[]> {
  const removed = await limits.remove();
  if (options.made) await removeMadeDirectories(record.workspace, options.made);
  if (await removeTree(record.workspace)) removed.push('workspace');
  if (options.leftovers) {
    for (let n = await removeRestoreLeftovers(record.workspace); n > 0; n--) removed.push('restore-leftover');
  }
  // A log nobody wrote here is looked for first (a failed unlink throws: an error object and its stack):
  // another instance that adopted the sandbox may still have written one.
  if (options.logWritten !== false || existsSync(record.log)) {
    try {
      unlinkSync(record.log);
      removed.push('log');
    } catch {
      // no command printed anything
    }
  }
  if (removeRecord(l, record.handle.id)) removed.push('label');
  return removed;
}
