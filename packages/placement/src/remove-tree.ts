// Removing a directory tree that something else may still be changing (a sandbox's old workspace, bind-mounted
// into a command that still runs) without ever following a symlink. A path-based recursive removal (`rm -r`,
// Node's `fs.rm`) lstats `a/d`, then lists and unlinks `a/d/x`: a command that swaps `d` for a symlink in
// between has the remover — root, on the host — list and delete the symlink's target's files. Here every step
// is relative to a directory already opened with O_NOFOLLOW (its /proc/self/fd path), and only a final
// component is ever named, which unlink and rmdir do not follow.
import { constants } from 'node:fs';
import { type FileHandle, open, readdir, rmdir, unlink } from 'node:fs/promises';

const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW; // libuv adds O_CLOEXEC

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** Second and later tries, shared by the whole removal: what keeps changing the tree cannot make it loop. */
interface Retries {
  left: number;
}

const again = (retries: Retries, pass: number) => pass === 0 || retries.left-- > 0;

/** Removes the entry `name` of the opened directory at `at` (a /proc/self/fd path); false if it stayed. */
async function removeEntry(at: string, name: string, retries: Retries): Promise<boolean> {
  const path = `${at}/${name}`;
  for (let pass = 0; again(retries, pass); pass++) {
    try {
      await unlink(path); // a file or a symlink (never followed); a directory answers EISDIR
      return true;
    } catch (e) {
      if (code(e) === 'ENOENT') return true;
      if (code(e) !== 'EISDIR' && code(e) !== 'EPERM') return false;
    }
    let dir: FileHandle;
    try {
      dir = await open(path, OPEN_DIR);
    } catch (e) {
      if (code(e) === 'ENOENT') return true;
      if (code(e) === 'ELOOP' || code(e) === 'ENOTDIR') continue; // swapped for a symlink or a file meanwhile
      return false;
    }
    try {
      await removeContents(`/proc/self/fd/${dir.fd}`, retries);
    } finally {
      await dir.close();
    }
    try {
      await rmdir(path);
      return true;
    } catch (e) {
      if (code(e) === 'ENOENT') return true;
      // ENOTDIR: a symlink now (unlinked next pass); ENOTEMPTY: something was added meanwhile
      if (code(e) !== 'ENOTDIR' && code(e) !== 'ENOTEMPTY' && code(e) !== 'EEXIST') return false;
    }
  }
  return false;
}

async function removeContents(at: string, retries: Retries): Promise<boolean> {
  let all = true;
  for (let pass = 0; again(retries, pass); pass++) {
    let names: string[];
    try {
      names = await readdir(at);
    } catch {
      return false;
    }
    if (names.length === 0) return true;
    all = true;
    for (const name of names) if (!(await removeEntry(at, name, retries))) all = false;
  }
  return all;
}

/**
 * Removes the directory `root` and everything in it without following any symlink, even one swapped in while
 * it runs. `root` itself must be a directory (a symlink there is not followed: false). Bounded: something
 * that keeps adding entries can leave the tree in place (false), never make this follow a link or loop.
 */
export async function removeTreeNoFollow(root: string, maxRetries = 1000): Promise<boolean> {
  const retries: Retries = { left: maxRetries };
  let dir: FileHandle;
  try {
    dir = await open(root, OPEN_DIR);
  } catch (e) {
    return code(e) === 'ENOENT';
  }
  try {
    await removeContents(`/proc/self/fd/${dir.fd}`, retries);
  } finally {
    await dir.close();
  }
  try {
    await rmdir(root);
    return true;
  } catch (e) {
    return code(e) === 'ENOENT';
  }
}
