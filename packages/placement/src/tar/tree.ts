// The filesystem side of an archive: a directory tree read into entries (for a snapshot) and entries
// written into an empty directory (for a restore or an image import) without ever writing through a
// symlink or outside the directory.
import {
  chmod,
  lchown,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { PlacementError } from '../errors.js';
import { MODE_MASK, normalizeEntryPath, parentOf, sortEntries, type TarEntry } from './tar-entry.js';

/**
 * Every file, directory and symlink under `root` (not `root` itself), paths relative to it. Sockets,
 * fifos and device files are left out; a hard-linked file appears once per name.
 */
export async function readTree(root: string): Promise<TarEntry[]> {
  const out: TarEntry[] = [];
  const walk = async (rel: string): Promise<void> => {
    const names = await readdir(rel === '' ? root : join(root, rel));
    for (const name of names) {
      const path = rel === '' ? name : `${rel}/${name}`;
      const abs = join(root, path);
      const st = await lstat(abs);
      const mode = st.mode & MODE_MASK;
      if (st.isDirectory()) {
        out.push({ type: 'directory', path, mode });
        await walk(path);
      } else if (st.isFile()) {
        out.push({ type: 'file', path, mode, data: new Uint8Array(await readFile(abs)) });
      } else if (st.isSymbolicLink()) {
        out.push({ type: 'symlink', path, mode: 0o777, target: await readlink(abs) });
      }
    }
  };
  await walk('');
  return out;
}

export interface WriteTreeOptions {
  /** Owner of everything written (lchown); default: whoever runs this. */
  readonly owner?: { readonly uid: number; readonly gid: number };
}

/**
 * Writes `entries` into `root`, which must be empty. Parents come first (missing ones are made 0755);
 * an entry whose parent is a file or a symlink in the archive is refused (`snapshot_mismatch`), so a
 * symlink can never redirect a later write. Directory modes are applied last, deepest first.
 */
export async function writeTree(
  root: string,
  entries: readonly TarEntry[],
  options: WriteTreeOptions = {},
): Promise<void> {
  const kinds = new Map<string, TarEntry['type']>();
  const dirModes: Array<[string, number]> = [];
  const own = async (abs: string) => {
    if (options.owner) await lchown(abs, options.owner.uid, options.owner.gid);
  };
  const ensureDir = async (path: string): Promise<void> => {
    if (path === '') return;
    const kind = kinds.get(path);
    if (kind === 'directory') return;
    if (kind !== undefined) {
      throw new PlacementError('snapshot_mismatch', `archive writes beneath ${path}, which is a ${kind}`, {
        path,
      });
    }
    await ensureDir(parentOf(path));
    await mkdir(join(root, path), { mode: 0o755 });
    await own(join(root, path));
    kinds.set(path, 'directory');
  };
  for (const raw of sortEntries(entries)) {
    const path = normalizeEntryPath(raw.path);
    if (kinds.has(path) && !(raw.type === 'directory' && kinds.get(path) === 'directory')) {
      throw new PlacementError('snapshot_mismatch', `duplicate archive path ${path}`, { path });
    }
    await ensureDir(parentOf(path));
    const abs = join(root, path);
    if (raw.type === 'directory') {
      await ensureDir(path);
      dirModes.push([abs, raw.mode & MODE_MASK]);
    } else if (raw.type === 'file') {
      await writeFile(abs, raw.data, { flag: 'wx', mode: 0o600 });
      await own(abs);
      await chmod(abs, raw.mode & MODE_MASK);
      kinds.set(path, 'file');
    } else {
      await symlink(raw.target, abs);
      await own(abs);
      kinds.set(path, 'symlink');
    }
  }
  dirModes.sort((a, b) => b[0].length - a[0].length);
  for (const [abs, mode] of dirModes) await chmod(abs, mode);
}

/** True when `path` exists as a directory (not following a final symlink). */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch {
    return false;
  }
}
