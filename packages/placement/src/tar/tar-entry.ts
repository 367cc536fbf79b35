// The entries of a workspace archive and the path rules every archive obeys (relative, no `.`/`..`/empty
// components), shared by the writer, the reader and the filesystem side.
import { PlacementError } from '../errors.js';

export type TarEntry =
  | { readonly type: 'directory'; readonly path: string; readonly mode: number }
  | { readonly type: 'file'; readonly path: string; readonly mode: number; readonly data: Uint8Array }
  | { readonly type: 'symlink'; readonly path: string; readonly mode: number; readonly target: string };

/** Permission bits kept in an archive (rwx for all three classes plus setuid, setgid, sticky). */
export const MODE_MASK = 0o7777;

function refuse(path: string, why: string): never {
  throw new PlacementError('snapshot_mismatch', `archive path ${JSON.stringify(path)} ${why}`, { path });
}

/**
 * The normal form of an archive path: `./` prefixes and a trailing `/` removed, then every component a
 * plain name. Absolute paths, `..`, `.`, empty components and NUL are refused (`snapshot_mismatch`).
 */
export function normalizeEntryPath(raw: string): string {
  let p = raw;
  while (p.startsWith('./')) p = p.slice(2);
  while (p.endsWith('/')) p = p.slice(0, -1);
  if (p === '' || p === '.') refuse(raw, 'names the root');
  if (p.startsWith('/')) refuse(raw, 'is absolute');
  if (p.includes('\0')) refuse(raw, 'contains NUL');
  for (const part of p.split('/')) {
    if (part === '' || part === '.' || part === '..') refuse(raw, 'has an empty, "." or ".." component');
  }
  return p;
}

const utf8 = new TextEncoder();

/** The archive order: by the UTF-8 bytes of the path (a directory sorts before everything inside it). */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(utf8.encode(a), utf8.encode(b));
}

export function sortEntries<T extends { readonly path: string }>(entries: readonly T[]): T[] {
  const keyed = entries.map((e) => ({ e, k: Buffer.from(e.path, 'utf8') }));
  keyed.sort((x, y) => Buffer.compare(x.k, y.k));
  return keyed.map((x) => x.e);
}

export function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i === -1 ? '' : path.slice(0, i);
}
