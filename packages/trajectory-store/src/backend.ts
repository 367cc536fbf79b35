// The backend contract: a tenant-scoped object store. The trajectory store (append, seal, read, imports,
// artifacts, retention) is written once against this interface; each backend is one folder whose files
// have the same roles — `<name>/<name>-backend.ts` (the ObjectBackend) and `<name>/<name>-backend-config.ts`
// (its zod-parsed options) — as Kysely's dialects do. Keys are `{tenant, path}` (see keys.ts).
import type { ObjectKey } from './keys.js';

export interface ObjectInfo {
  /** The path relative to the tenant's root. */
  readonly path: string;
  readonly size: number;
  /** When the object was last written (the file's mtime; S3's `LastModified`); null where not reported. */
  readonly modifiedAt: Date | null;
}

export interface PutStreamResult {
  /** Bytes written. */
  readonly size: number;
  /** Parts the object was written in (1 when it went in one request). */
  readonly parts: number;
}

export interface ObjectBackend {
  /** `local` | `s3`: for logs and the README, never branched on by the store. */
  readonly kind: string;
  /** Writes a whole (small) object atomically: readers see the old object or the new one, never a part. */
  put(key: ObjectKey, body: Uint8Array): Promise<void>;
  /** Writes a large object from a stream without holding it (multipart on S3), atomically on completion. */
  putStream(key: ObjectKey, body: AsyncIterable<Uint8Array>): Promise<PutStreamResult>;
  /** The whole object, or null if there is none. */
  get(key: ObjectKey): Promise<Uint8Array | null>;
  /** `length` bytes from `start`, or null if there is no object. */
  getRange(key: ObjectKey, start: number, length: number): Promise<Uint8Array | null>;
  /** The object as a stream of pieces, or null if there is none. */
  getStream(key: ObjectKey): Promise<AsyncIterable<Uint8Array> | null>;
  /** Whether the object exists (and its size). */
  stat(key: ObjectKey): Promise<ObjectInfo | null>;
  /** Every object whose path starts with `prefix`, ascending by path, streamed page by page. */
  list(tenant: string, prefix: string): AsyncIterable<ObjectInfo>;
  /** Moves an object to a new path in the same tenant (rename on disk, copy + delete in a bucket). */
  move(from: ObjectKey, to: ObjectKey): Promise<void>;
  /** Deletes an object; deleting what is not there is not an error. */
  delete(key: ObjectKey): Promise<void>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}
