// The fast path of a snapshot: a workspace that holds nothing but a few directories the sandbox user can
// read (the common case of a command that wrote no files: just the `out/` it was given) has the same
// canonical archive read from the host as from inside a sandbox — directories carry no content to race
// for — so the driver answers it without starting bubblewrap. Anything else (a file, a symlink, a
// directory the sandbox user could not list, more than `max` entries) goes through the sandboxed tar.
import { chownSync, type Dirent, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MODE_MASK, type TarEntry } from '@everdict/placement';

/**
 * The archive entries of `root` (every directory under it, paths relative to it, each with its mode — what
 * `readTree` gives for such a tree) when `root` and everything under it are at most `max` directories, each
 * listable by `owner` (or by anyone, unowned); null otherwise. The snapshot's fast path archives these
 * entries as they are: the walk that checked the tree is the one read, not a second walk through the thread
 * pool (three trips for a workspace holding `out/`). Synchronous: at most `max` + 1 lstat/readdir pairs on a
 * local directory, where each asynchronous call is a thread-pool trip.
 */
export function readableDirectoryEntries(
  root: string,
  owner: { readonly uid: number } | null,
  max = 64,
): TarEntry[] | null {
  const queue: [string, string][] = [[root, '']];
  const out: TarEntry[] = [];
  let seen = 0;
  while (queue.length > 0) {
    const [dir, rel] = queue.pop()!;
    let st: ReturnType<typeof lstatSync> | undefined;
    try {
      st = lstatSync(dir);
    } catch {
      return null;
    }
    if (!st?.isDirectory()) return null;
    // tar runs as the sandbox user: it must be able to list and enter each directory, as the owner.
    if ((st.mode & 0o500) !== 0o500 || (owner !== null && st.uid !== owner.uid)) return null;
    if (rel !== '') out.push({ type: 'directory', path: rel, mode: st.mode & MODE_MASK });
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return null;
    }
    for (const e of entries) {
      if (!e.isDirectory() || ++seen > max) return null;
      queue.push([join(dir, e.name), rel === '' ? e.name : `${rel}/${e.name}`]);
    }
  }
  return out;
}

/** True when `root` is a tree `readableDirectoryEntries` archives (tests). */
export async function onlyReadableDirectories(
  root: string,
  owner: { readonly uid: number } | null,
  max = 64,
): Promise<boolean> {
  return readableDirectoryEntries(root, owner, max) !== null;
}

/**
 * Makes a new sandbox's `directories` (ProvisionSpec) in its workspace, parents first, each owned by the
 * sandbox user (`owner`; unchanged when the driver does not run as root) and mode 0755 (less the process's
 * umask, as a `mkdir -p` inside the sandbox would). Runs as the driver's user, before any command of the
 * sandbox has run, so nothing can swap a path under it; still, each step is checked with `lstat`: a path a
 * seeding snapshot put there as a file or a symlink is never followed but refused (`Error`, the caller's
 * spawn_failed). A directory already there is kept as it is. Synchronous: a few mkdir/chown calls. Returns
 * every directory of `paths` (absolute), parents first: dispose removes them deepest first.
 */
export function makeWorkspaceDirectories(
  root: string,
  paths: readonly string[],
  owner: { readonly uid: number; readonly gid: number } | null,
): string[] {
  const made = new Set<string>();
  for (const path of paths) {
    let dir = root;
    for (const segment of path.split('/')) {
      dir = join(dir, segment);
      if (made.has(dir)) continue;
      try {
        mkdirSync(dir, { mode: 0o755 });
        if (owner) chownSync(dir, owner.uid, owner.gid);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        if (!lstatSync(dir).isDirectory())
          throw new Error(`${path}: ${dir.slice(root.length + 1)} is in the workspace and not a directory`);
      }
      made.add(dir);
    }
  }
  return [...made];
}
