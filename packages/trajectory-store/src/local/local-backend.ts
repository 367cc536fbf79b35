// The local-directory backend: `<root>/tenants/<tenant>/<path>`. Writes go to a `~tmp-` sibling and are
// renamed into place (atomic on one filesystem); listings skip those temporaries.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ObjectBackend, ObjectInfo, PutStreamResult } from '../backend.js';
import { parseOrThrow, storageError } from '../errors.js';
import { encodeSegment, type ObjectKey } from '../keys.js';
import { LocalBackendConfig } from './local-backend-config.js';

const TMP_MARK = '~tmp-';

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === 'ENOENT';
}

/** Directories this process made or saw (a write into one skips its mkdir; a miss retries with one). */
const knownDirs = new Set<string>();

/**
 * Tries a write into a directory a concurrent `delete` may prune (it removes directories it left empty) this many
 * times: each try makes the directory again, and a prune can only take it away in the moment between that and
 * the write — to fail, one would have to land there on every try.
 */
const DIRECTORY_TRIES = 16;

/**
 * Runs a write into `file`'s directory, creating it; again (up to `DIRECTORY_TRIES`) while a concurrent prune
 * removed it — between the mkdir and the write, or inside the mkdir itself (Node's recursive mkdir checks an
 * existing directory with a stat, which then finds none: ENOENT).
 */
async function inDir<T>(file: string, write: () => Promise<T>): Promise<T> {
  const dir = path.dirname(file);
  for (let tried = 1; ; tried++) {
    try {
      if (tried > 1 || !knownDirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        if (knownDirs.size > 10_000) knownDirs.clear();
        knownDirs.add(dir);
      }
      return await write();
    } catch (err) {
      if (!isMissing(err) || tried >= DIRECTORY_TRIES) throw err;
    }
  }
}

export class LocalBackend implements ObjectBackend {
  readonly kind = 'local';
  readonly root: string;
  readonly #fsync: boolean;

  constructor(config: LocalBackendConfig) {
    const parsed = parseOrThrow(LocalBackendConfig, config, 'local backend config');
    this.root = path.resolve(parsed.root);
    this.#fsync = parsed.fsync;
  }

  #tenantDir(tenant: string): string {
    return path.join(this.root, 'tenants', encodeSegment(tenant));
  }

  #file(key: ObjectKey): string {
    return path.join(this.#tenantDir(key.tenant), ...key.path.split('/'));
  }

  #tmp(file: string): string {
    return `${file}${TMP_MARK}${randomBytes(6).toString('hex')}`;
  }

  async put(key: ObjectKey, body: Uint8Array): Promise<void> {
    const file = this.#file(key);
    const tmp = this.#tmp(file);
    try {
      const handle = await inDir(tmp, () => open(tmp, 'w'));
      try {
        await handle.writeFile(body);
        if (this.#fsync) await handle.sync();
      } finally {
        await handle.close();
      }
      await inDir(file, () => rename(tmp, file));
    } catch (err) {
      await rm(tmp, { force: true });
      throw storageError(err, `write ${key.path}`);
    }
  }

  async putStream(key: ObjectKey, body: AsyncIterable<Uint8Array>): Promise<PutStreamResult> {
    const file = this.#file(key);
    const tmp = this.#tmp(file);
    let size = 0;
    try {
      const counted = async function* () {
        for await (const piece of body) {
          size += piece.byteLength;
          yield piece;
        }
      };
      const handle = await inDir(tmp, () => open(tmp, 'w'));
      await pipeline(counted(), handle.createWriteStream({ flush: this.#fsync }));
      await inDir(file, () => rename(tmp, file));
      return { size, parts: 1 };
    } catch (err) {
      await rm(tmp, { force: true });
      throw storageError(err, `write ${key.path}`);
    }
  }

  async get(key: ObjectKey): Promise<Uint8Array | null> {
    try {
      return await readFile(this.#file(key));
    } catch (err) {
      if (isMissing(err)) return null;
      throw storageError(err, `read ${key.path}`);
    }
  }

  async getRange(key: ObjectKey, start: number, length: number): Promise<Uint8Array | null> {
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    try {
      handle = await open(this.#file(key), 'r');
      const out = Buffer.alloc(length);
      const { bytesRead } = await handle.read(out, 0, length, start);
      return out.subarray(0, bytesRead);
    } catch (err) {
      if (isMissing(err)) return null;
      throw storageError(err, `read ${key.path}`);
    } finally {
      await handle?.close();
    }
  }

  async getStream(key: ObjectKey): Promise<AsyncIterable<Uint8Array> | null> {
    const file = this.#file(key);
    if (!(await this.stat(key))) return null;
    return createReadStream(file, { highWaterMark: 1 << 20 });
  }

  async stat(key: ObjectKey): Promise<ObjectInfo | null> {
    try {
      const s = await stat(this.#file(key));
      return s.isFile() ? { path: key.path, size: s.size, modifiedAt: s.mtime } : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw storageError(err, `stat ${key.path}`);
    }
  }

  async *list(tenant: string, prefix: string): AsyncIterable<ObjectInfo> {
    const base = this.#tenantDir(tenant);
    const slash = prefix.lastIndexOf('/');
    const dirRel = slash >= 0 ? prefix.slice(0, slash) : '';
    const found: ObjectInfo[] = [];
    const walk = async (rel: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(path.join(base, ...rel.split('/').filter(Boolean)), { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw storageError(err, `list ${prefix}`);
      }
      for (const entry of entries) {
        if (entry.name.includes(TMP_MARK)) continue;
        const child = rel ? `${rel}/${entry.name}` : entry.name;
        if (entry.isDirectory()) {
          if (`${child}/`.startsWith(prefix) || prefix.startsWith(`${child}/`)) await walk(child);
        } else if (child.startsWith(prefix)) {
          const s = await stat(path.join(base, ...child.split('/'))).catch(() => null);
          if (s) found.push({ path: child, size: s.size, modifiedAt: s.mtime });
        }
      }
    };
    await walk(dirRel);
    found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    yield* found;
  }

  async move(from: ObjectKey, to: ObjectKey): Promise<void> {
    try {
      const target = this.#file(to);
      await inDir(target, () => rename(this.#file(from), target));
    } catch (err) {
      throw storageError(err, `move ${from.path}`);
    }
  }

  async delete(key: ObjectKey): Promise<void> {
    const file = this.#file(key);
    try {
      await rm(file, { force: true });
    } catch (err) {
      throw storageError(err, `delete ${key.path}`);
    }
    // Prune directories left empty, up to the tenant root (best effort: a non-empty one stops it).
    const stop = this.#tenantDir(key.tenant);
    for (let dir = path.dirname(file); dir.startsWith(stop) && dir !== stop; dir = path.dirname(dir)) {
      if (
        !(await rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
      knownDirs.delete(dir);
    }
  }

  async close(): Promise<void> {}
}

/** A backend over a local directory (the embedded default). */
export function localBackend(config: LocalBackendConfig): LocalBackend {
  return new LocalBackend(config);
}
