// Removing a sandbox: what runs in its cgroups is killed and the cgroups removed, then its workspace and
// log, and its label file last — so a crash halfway through leaves a label file for `reap` to find.
import { type Dirent, existsSync, unlinkSync } from 'node:fs';
import { readdir, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { SandboxLimits } from './limits/limits.js';
import { removeRecord, type SandboxRecord, type StateLayout } from './sandbox-state.js';

/**
 * Removes a tree of empty directories only (a command run's workspace: `out/` and nothing in it), depth
 * first, without following anything (`readdir`'s types are the entries' own): a readdir of `path`, then an
 * rmdir of each directory in it — only a directory that is not empty is read in turn — then `path`'s
 * rmdir; a recursive `rm` also lstats each entry. False as soon as it meets anything else, or more than
 * `budget` entries — the caller then removes the rest recursively.
 *
 * Every call goes through the thread pool. These rmdirs were synchronous (a thread-pool trip costs two context
 * switches), but a sandbox's directories were bind-mounted into its namespaces, and their rmdir waits in the
 * kernel's mount handling (most likely on locks the other sandboxes' namespace setup and teardown take): 0.5–1.3 ms at the
 * median and 10–23 ms at p99 each (`out/` and the workspace, 16 sandboxes at a time; a 100 ms pause before
 * the dispose halves the median, not the p99). The runner's whole thread stood still meanwhile, 30 % of its
 * profile's samples under the runner bench.
 */
async function removeEmptyDirs(path: string, budget = { left: 16 }): Promise<boolean> {
  let entries: Dirent[];
  try {
    entries = await readdir(path, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const e of entries) {
    if (!e.isDirectory() || --budget.left < 0) return false;
    const child = join(path, e.name);
    try {
      await rmdir(child); // the common case: `out/`, empty
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') return false;
      if (!(await removeEmptyDirs(child, budget))) return false;
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
 * each, anything else recursively (it may be large).
 */
async function removeTree(path: string): Promise<boolean> {
  try {
    await rmdir(path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code === 'ENOTEMPTY' && (await removeEmptyDirs(path))) return true;
  }
  try {
    await rm(path, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

export interface RemovalHints {
  /** Also half-done restores of a crashed process (`reap`). */
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
 * `workspace`, `restore-leftover` (with `leftovers`: half-done restores of a crashed process), `log`, `label`.
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
    const prefix = `.${basename(record.workspace)}.`;
    const parent = dirname(record.workspace);
    for (const name of await readdir(parent).catch(() => [] as string[])) {
      if (name.startsWith(prefix) && (await removeTree(join(parent, name)))) removed.push('restore-leftover');
    }
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
