// The same deterministic archive as `writeTarSync`, streamed: regular files whose bytes are read one file at a
// time, as the reader pulls — for archives too large to hold (a run's out/ of thousands of files, served to a
// user as one download). Same blocks, same order (sorted by the UTF-8 bytes of the path), same refusals
// (a path out of its normal form, a path twice); each file's bytes must be exactly its declared size.
// Small blocks go out gathered in pieces of up to PIECE_BYTES, so many small files are not a piece each.
import { PlacementError } from '../errors.js';
import { MODE_MASK, normalizeEntryPath, sortEntries } from './tar-entry.js';
import { END_OF_ARCHIVE_LENGTH, headerParts, type Part, paddingLength, TYPEFLAG } from './ustar.js';

/** A file's bytes: pieces as they come, or already at hand. */
export type FileBytes = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** A regular file of a streamed archive: its size up front, its bytes opened shortly before its turn. */
export interface StreamedFile {
  readonly path: string;
  readonly mode: number;
  readonly size: number;
  readonly open: () => Promise<FileBytes> | FileBytes;
}

/** Blocks gathered before they go out as one piece (a file's larger pieces go out as they come). */
export const PIECE_BYTES = 64 * 1024;

/** Files opened ahead of the one going out (their `open` overlaps its bytes: a store's round trips, many small files). */
export const READ_AHEAD = 8;

const partBytes = (part: Part) => (typeof part === 'number' ? part : part.byteLength);

const headerOf = (f: StreamedFile) => ({
  name: f.path,
  typeflag: TYPEFLAG.file,
  mode: f.mode & MODE_MASK,
  size: f.size,
  linkname: '',
});

/** The length of `streamTar(files)` when every file's bytes are its declared size: known before any is read. */
export function streamedTarLength(files: readonly StreamedFile[]): number {
  let total = END_OF_ARCHIVE_LENGTH;
  for (const f of files) {
    const header = headerOf({ ...f, path: normalizeEntryPath(f.path) });
    for (const part of headerParts(header)) total += partBytes(part);
    total += f.size + paddingLength(f.size);
  }
  return total;
}

/**
 * The canonical archive of `files`, piece by piece. A file whose bytes are not its declared size, a file that
 * cannot be read, or a refused path ends the iteration with that error (before the end blocks: a reader never
 * takes a cut archive for a whole one). Up to `readAhead` files after the one going out are opened already: an
 * `open` should hold little until its bytes are read (a small file whole, a large one lazily).
 */
export async function* streamTar(
  files: readonly StreamedFile[],
  { readAhead = READ_AHEAD }: { readAhead?: number } = {},
): AsyncGenerator<Uint8Array> {
  const sorted = sortEntries(files.map((f) => ({ ...f, path: normalizeEntryPath(f.path) })));
  const opening: Promise<FileBytes>[] = [];
  const openUpTo = (last: number) => {
    for (let j = opening.length; j <= Math.min(last, sorted.length - 1); j++) {
      const file = sorted[j]!;
      const opened = Promise.resolve().then(() => file.open());
      opened.catch(() => undefined); // awaited in its turn; a failure after an earlier one ended it goes unread
      opening.push(opened);
    }
  };
  let pending: Part[] = [];
  let pendingBytes = 0;
  const add = (part: Part) => {
    pending.push(part);
    pendingBytes += partBytes(part);
  };
  const take = (): Uint8Array => {
    const out = new Uint8Array(pendingBytes); // zero-filled: padding is already there
    let at = 0;
    for (const part of pending) {
      if (typeof part !== 'number') out.set(part, at);
      at += partBytes(part);
    }
    pending = [];
    pendingBytes = 0;
    return out;
  };
  for (let i = 0; i < sorted.length; i++) {
    const f = sorted[i]!;
    if (i > 0 && f.path === sorted[i - 1]!.path)
      throw new PlacementError('snapshot_mismatch', `duplicate archive path ${f.path}`, { path: f.path });
    for (const part of headerParts(headerOf(f))) add(part);
    openUpTo(i + readAhead);
    let seen = 0;
    for await (const piece of await opening[i]!) {
      seen += piece.byteLength;
      if (seen > f.size) break;
      if (piece.byteLength >= PIECE_BYTES) {
        if (pendingBytes > 0) yield take();
        yield piece;
      } else {
        add(piece);
        if (pendingBytes >= PIECE_BYTES) yield take();
      }
    }
    if (seen !== f.size)
      throw new PlacementError(
        'snapshot_mismatch',
        `archive file ${f.path}: ${seen > f.size ? 'more than' : seen} of its ${f.size} bytes`,
        { path: f.path },
      );
    add(paddingLength(f.size));
    if (pendingBytes >= PIECE_BYTES) yield take();
  }
  add(END_OF_ARCHIVE_LENGTH);
  yield take();
}
