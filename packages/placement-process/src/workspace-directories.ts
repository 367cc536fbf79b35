// The fast path of a snapshot: a workspace that holds nothing but a few directories the sandbox user can
// read (the common case of a command that wrote no files: just the `out/` it was given) has the same
// canonical archive read from the host as from inside a sandbox — directories carry no content to race
// for — so the driver answers it without starting bubblewrap. Anything else (a file, a symlink, a
// directory the sandbox user could not list, more than `max` entries) goes through the sandboxed tar.
import { type Dirent, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * True when `root` and everything under it are at most `max` directories, each listable by `owner` (or by
 * anyone, unowned). Synchronous: at most `max` + 1 lstat/readdir pairs on a local directory, where each
 * asynchronous call is a thread-pool trip.
 */
export async function onlyReadableDirectories(
  root: string,
  owner: { readonly uid: number } | null,
  max = 64,
): Promise<boolean> {
  const queue = [root];
  let seen = 0;
  while (queue.length > 0) {
    const dir = queue.pop()!;
    let st: ReturnType<typeof lstatSync> | undefined;
    try {
      st = lstatSync(dir);
    } catch {
      return false;
    }
    if (!st?.isDirectory()) return false;
    // tar runs as the sandbox user: it must be able to list and enter each directory, as the owner.
    if ((st.mode & 0o500) !== 0o500 || (owner !== null && st.uid !== owner.uid)) return false;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries) {
      if (!e.isDirectory() || ++seen > max) return false;
      queue.push(join(dir, e.name));
    }
  }
  return true;
}
