// Removing a sandbox: what runs in its cgroups is killed and the cgroups removed, then its workspace and
// log, and its label file last — so a crash halfway through leaves a label file for `reap` to find.
import { rmdirSync, unlinkSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { SandboxLimits } from './limits/limits.js';
import { removeRecord, type SandboxRecord, type StateLayout } from './sandbox-state.js';

/** Removes a directory tree; an empty one (the common case) without a trip through the thread pool. */
async function removeTree(path: string): Promise<boolean> {
  try {
    rmdirSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
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
