// The deterministic POSIX tar writer. Bytes depend only on the entries: sorted by path (UTF-8 bytes),
// mtime 0, uid/gid 0, no user/group names, mode & 07777, regular files, directories and symlinks only
// (no device files), directory names ending in `/`. Headers are ustar; a name that does not fit ustar (or
// is not ASCII), or a link target past 100 bytes, gets a pax `path`/`linkpath` record first.
// Why our own writer: tar-stream (the reader here, and the writer at first) encodes exactly these bytes,
// but its pack is a stream that costs ≈ 0.2–1 ms per entry on this machine; this writes the same blocks
// synchronously into one buffer (tar.test.ts checks the bytes equal tar-stream's, property-based).
import { PlacementError } from '../errors.js';
import { MODE_MASK, normalizeEntryPath, sortEntries, type TarEntry } from './tar-entry.js';
import { END_OF_ARCHIVE_LENGTH, headerParts, type Part, paddingLength, TYPEFLAG } from './ustar.js';

function entryParts(e: TarEntry): Part[] {
  const name = e.type === 'directory' ? `${e.path}/` : e.path;
  const size = e.type === 'file' ? e.data.byteLength : 0;
  const header = headerParts({
    name,
    typeflag: TYPEFLAG[e.type],
    mode: e.mode & MODE_MASK,
    size,
    linkname: e.type === 'symlink' ? e.target : '',
  });
  return e.type === 'file' ? [...header, e.data, paddingLength(size)] : header;
}

/** The canonical archive of `entries` (any order in; sorted out). Duplicate paths are refused. */
export async function writeTar(entries: readonly TarEntry[]): Promise<Uint8Array> {
  return writeTarSync(entries);
}

export function writeTarSync(entries: readonly TarEntry[]): Uint8Array {
  const sorted = sortEntries(entries.map((e) => ({ ...e, path: normalizeEntryPath(e.path) })));
  const parts: Part[] = [];
  let total = END_OF_ARCHIVE_LENGTH;
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    if (i > 0 && e.path === sorted[i - 1]!.path) {
      throw new PlacementError('snapshot_mismatch', `duplicate archive path ${e.path}`);
    }
    for (const part of entryParts(e)) {
      parts.push(part);
      total += typeof part === 'number' ? part : part.byteLength;
    }
  }
  const out = new Uint8Array(total); // zero-filled: padding and the end blocks are already there
  let at = 0;
  for (const part of parts) {
    if (typeof part === 'number') at += part;
    else {
      out.set(part, at);
      at += part.byteLength;
    }
  }
  return out;
}
