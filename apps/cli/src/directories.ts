// `mkdir -p` without Node's recursive mkdir: under /proc, Node 20's `mkdirSync(path, { recursive: true })` (and
// its promise form) never returns — procfs answers ENOENT for the new entry, Node makes the parent (EEXIST)
// and tries again, for ever. Each missing directory is made on its own instead, and the first that cannot be is
// thrown as the system said it (ENOENT under /proc, ENOTDIR under a file, EACCES, EROFS).
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Makes `dir` and any missing ancestors; a directory already there (or made meanwhile) is kept. */
export function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !isDirectory(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const at of missing.reverse()) {
    try {
      mkdirSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // Something is there: a directory made meanwhile is fine; anything else is in the way.
      if (!isDirectory(at))
        throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${at}'`), {
          code: 'ENOTDIR',
          path: at,
        });
    }
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
