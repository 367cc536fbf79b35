// The S3 backend behind a lazy door: `@aws-sdk/client-s3` (~40 MB RSS, ~1.5 s to load) is imported on the
// first call that needs it, so a process on the local backend never loads it. The config is checked now.
import type { ObjectBackend, ObjectInfo, PutStreamResult } from '../backend.js';
import { parseOrThrow } from '../errors.js';
import type { ObjectKey } from '../keys.js';
import type { S3Backend } from './s3-backend.js';
import { S3BackendConfig } from './s3-backend-config.js';

/** An S3-compatible backend (path-style when an endpoint is set); the AWS SDK loads on first use. */
export function s3Backend(config: S3BackendConfig): ObjectBackend {
  parseOrThrow(S3BackendConfig, config, 's3 backend config');
  let real: Promise<S3Backend> | undefined;
  const load = (): Promise<S3Backend> => {
    real ??= import('./s3-backend.js').then((m) => m.s3Backend(config));
    return real;
  };
  return {
    kind: 's3',
    put: async (key: ObjectKey, body: Uint8Array) => (await load()).put(key, body),
    putStream: async (key: ObjectKey, body: AsyncIterable<Uint8Array>): Promise<PutStreamResult> =>
      (await load()).putStream(key, body),
    get: async (key: ObjectKey) => (await load()).get(key),
    getRange: async (key: ObjectKey, start: number, length: number) =>
      (await load()).getRange(key, start, length),
    getStream: async (key: ObjectKey) => (await load()).getStream(key),
    stat: async (key: ObjectKey) => (await load()).stat(key),
    async *list(tenant: string, prefix: string): AsyncIterable<ObjectInfo> {
      yield* (await load()).list(tenant, prefix);
    },
    move: async (from: ObjectKey, to: ObjectKey) => (await load()).move(from, to),
    delete: async (key: ObjectKey) => (await load()).delete(key),
    close: async () => {
      if (real) await (await real).close();
    },
  } as ObjectBackend;
}
