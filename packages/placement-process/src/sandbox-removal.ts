// Removing a sandbox: what runs in its cgroups is killed and the cgroups removed, then its workspace and
// log, and its label file last — so a crash halfway through leaves a label file for `reap` to find.
import { type Dirent, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { SandboxLimits } from './limits/limits.js';
import { removeRecord, type SandboxRecord, type StateLayout } from './sandbox-state.js';

/**
 * Removes a tree of empty directories only (a command run's workspace: `out/` and nothing in it), depth
 * first, without following anything (`readdir`'s types are the entries' own): a readdir of `path`, then an
 * rmdir of each directory in it — only a directory that is not empty is read in turn — then `path`'s
 * rmdir; a recursive `rm` also lstats each entry. Synchronous: a handful of calls on a local directory,
 * where each asynchronous one is a thread-pool trip (two context switches). False as soon as it meets
 * anything else, or more than `budget` entries — the caller then removes the rest recursively.
 */
function removeEmptyDirs(path: string, budget = { left: 16 }): boolean {
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const e of entries) {
    if (!e.isDirectory() || --budget.left < 0) return false;
    const child = join(path, e.name);
    try {
      rmdirSync(child); // the common case: `out/`, empty
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') return false;
      if (!removeEmptyDirs(child, budget)) return false;
    }
  }
  try {
    rmdirSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes a directory tree; an empty one (the common case) or one of a few empty directories without a
 * trip through the thread pool, anything else recursively (asynchronously: it may be large).
 */
async function removeTree(path: string): Promise<boolean> {
  try {
    rmdirSync(path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code === 'ENOTEMPTY' && removeEmptyDirs(path)) return true;
  }
  try {
    await rm(path, { recursive: true });
    return true;
  } catch {
    return false;
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
  options: { leftovers?: boolean } = {},
): Promise<string[]> {
  const removed = await limits.remove();
  if (await removeTree(record.workspace)) removed.push('workspace');
  if (options.leftovers) {
    const prefix = `.${basename(record.workspace)}.`;
    const parent = dirname(record.workspace);
    for (const name of await readdir(parent).catch(() => [] as string[])) {
      if (name.startsWith(prefix) && (await removeTree(join(parent, name)))) removed.push('restore-leftover');
    }
  }
  try {
    unlinkSync(record.log);
    removed.push('log');
  } catch {
    // no command printed anything
  }
  if (removeRecord(l, record.handle.id)) removed.push('label');
  return removed;
}
