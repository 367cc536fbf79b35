// Reading archives: strictly (a snapshot must be exactly the canonical form) or leniently (an imported
// image tarball: hard links become copies, device files and fifos are skipped, gzip is unwrapped).
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { PlacementError } from '../errors.js';
import { MODE_MASK, normalizeEntryPath, type TarEntry } from './tar-entry.js';
import { writeTar } from './tar-writer.js';

export interface ReadTarOptions {
  /** Skip entries that are not files, directories, symlinks or hard links (device files, fifos) instead of refusing. */
  readonly skipSpecial?: boolean;
}

/** `.`, `./`, `/` and the like name the archive's root, which an archive of a directory's contents leaves out. */
function isRootName(name: string): boolean {
  return name.replace(/^(\.\/)+/, '').replace(/\/+$/, '') === '' || name === '.' || /^\.\/*$/.test(name);
}

function malformed(why: string): PlacementError {
  return new PlacementError('snapshot_mismatch', `not an acceptable archive: ${why}`);
}

/** The entries of a tar (gzip-wrapped or not), paths normalized. Hard links become copies of their target. */
export async function readTar(bytes: Uint8Array, options: ReadTarOptions = {}): Promise<TarEntry[]> {
  let raw = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b) {
    try {
      raw = gunzipSync(raw);
    } catch (e) {
      throw malformed(`bad gzip (${(e as Error).message})`);
    }
  }
  const out: TarEntry[] = [];
  const files = new Map<string, Uint8Array>();
  const ex = extract();
  const done = (async () => {
    for await (const entry of ex) {
      const h = entry.header;
      const parts: Buffer[] = [];
      for await (const c of entry) parts.push(c as Buffer);
      if (h.type === 'directory' && isRootName(h.name)) continue;
      const path = normalizeEntryPath(h.name);
      const mode = (h.mode ?? 0) & MODE_MASK;
      switch (h.type) {
        case 'file':
        case 'contiguous-file': {
          const data = new Uint8Array(Buffer.concat(parts));
          files.set(path, data);
          out.push({ type: 'file', path, mode, data });
          break;
        }
        case 'directory':
          out.push({ type: 'directory', path, mode });
          break;
        case 'symlink':
          out.push({ type: 'symlink', path, mode, target: h.linkname ?? '' });
          break;
        case 'link': {
          const data = files.get(normalizeEntryPath(h.linkname ?? ''));
          if (!data) throw malformed(`hard link ${path} to an earlier file that is not in the archive`);
          out.push({ type: 'file', path, mode, data });
          break;
        }
        default:
          if (!options.skipSpecial)
            throw malformed(`${path} is a ${h.type} (only files, directories, symlinks)`);
      }
    }
  })();
  try {
    ex.end(raw);
    await done;
  } catch (e) {
    if (e instanceof PlacementError) throw e;
    throw malformed((e as Error).message);
  }
  return out;
}

/** The canonical form of any acceptable tar (same entries, deterministic bytes). */
export async function canonicalTar(bytes: Uint8Array, options: ReadTarOptions = {}): Promise<Uint8Array> {
  return writeTar(await readTar(bytes, options));
}

/** True when `bytes` is exactly the canonical archive of its own entries. */
export async function isCanonicalTar(bytes: Uint8Array): Promise<boolean> {
  try {
    const again = await canonicalTar(bytes);
    return (
      Buffer.compare(Buffer.from(again), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) === 0
    );
  } catch (e) {
    if (e instanceof PlacementError) return false;
    throw e;
  }
}
