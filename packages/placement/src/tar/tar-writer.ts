// The deterministic POSIX tar writer. Bytes depend only on the entries: sorted by path (UTF-8 bytes),
// mtime 0, uid/gid 0, no user/group names, mode & 07777, regular files, directories and symlinks only
// (no device files), directory names ending in `/`. Headers are ustar; a name that does not fit ustar (or is not ASCII) gets a pax
// `path`/`linkpath` record — tar-stream's encoding, which depends on nothing but the header we give it.
import { pack } from 'tar-stream';
import { PlacementError } from '../errors.js';
import { MODE_MASK, normalizeEntryPath, sortEntries, type TarEntry } from './tar-entry.js';

const EPOCH = new Date(0);
const EMPTY = Buffer.alloc(0);

/** The canonical archive of `entries` (any order in; sorted out). Duplicate paths are refused. */
export async function writeTar(entries: readonly TarEntry[]): Promise<Uint8Array> {
  const normal = entries.map((e) => ({ ...e, path: normalizeEntryPath(e.path) }));
  const sorted = sortEntries(normal);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.path === sorted[i - 1]!.path) {
      throw new PlacementError('snapshot_mismatch', `duplicate archive path ${sorted[i]!.path}`);
    }
  }
  const p = pack();
  const chunks: Buffer[] = [];
  const collected = (async () => {
    for await (const chunk of p) chunks.push(chunk as Buffer);
  })();
  for (const e of sorted) {
    const common = {
      name: e.path,
      mode: e.mode & MODE_MASK,
      uid: 0,
      gid: 0,
      mtime: EPOCH,
      uname: '',
      gname: '',
    };
    if (e.type === 'file') {
      p.entry(
        { ...common, type: 'file', size: e.data.byteLength },
        Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength),
      );
    } else if (e.type === 'directory') {
      p.entry({ ...common, name: `${e.path}/`, type: 'directory', size: 0 }, EMPTY);
    } else {
      p.entry({ ...common, type: 'symlink', size: 0, linkname: e.target }, EMPTY);
    }
  }
  p.finalize();
  await collected;
  return new Uint8Array(Buffer.concat(chunks));
}
