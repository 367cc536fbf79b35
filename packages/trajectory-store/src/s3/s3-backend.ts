// The S3-compatible backend: `<bucket>/<prefix>tenants/<tenant>/<path>`. Large objects go up as multipart
// uploads (s3-multipart.ts); checksums are computed only when an operation requires them, which keeps
// streamed bodies byte-exact on S3-compatible servers that do not speak aws-chunked encoding.
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  paginateListObjectsV2,
  S3Client,
} from '@aws-sdk/client-s3';
import type { ObjectBackend, ObjectInfo, PutStreamResult } from '../backend.js';
import { parseOrThrow, storageError } from '../errors.js';
import { encodeSegment, type ObjectKey } from '../keys.js';
import { S3BackendConfig } from './s3-backend-config.js';
import { uploadStream } from './s3-multipart.js';

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}

export class S3Backend implements ObjectBackend {
  readonly kind = 's3';
  readonly bucket: string;
  readonly client: S3Client;
  readonly #prefix: string;
  readonly #partSize: number;

  constructor(config: S3BackendConfig) {
    const parsed = parseOrThrow(S3BackendConfig, config, 's3 backend config');
    this.bucket = parsed.bucket;
    this.#prefix = parsed.prefix;
    this.#partSize = parsed.partSize;
    this.client = new S3Client({
      region: parsed.region,
      ...(parsed.endpoint ? { endpoint: parsed.endpoint } : {}),
      forcePathStyle: parsed.forcePathStyle ?? parsed.endpoint !== undefined,
      ...(parsed.credentials ? { credentials: parsed.credentials } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  #tenantPrefix(tenant: string): string {
    return `${this.#prefix}tenants/${encodeSegment(tenant)}/`;
  }

  #key(key: ObjectKey): string {
    return `${this.#tenantPrefix(key.tenant)}${key.path}`;
  }

  async put(key: ObjectKey, body: Uint8Array): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.#key(key), Body: body }));
    } catch (err) {
      throw storageError(err, `put ${key.path}`);
    }
  }

  async putStream(key: ObjectKey, body: AsyncIterable<Uint8Array>): Promise<PutStreamResult> {
    try {
      return await uploadStream(this.client, this.bucket, this.#key(key), body, this.#partSize);
    } catch (err) {
      throw storageError(err, `upload ${key.path}`);
    }
  }

  async get(key: ObjectKey): Promise<Uint8Array | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      if (isNotFound(err)) return null;
      throw storageError(err, `get ${key.path}`);
    }
  }

  async getRange(key: ObjectKey, start: number, length: number): Promise<Uint8Array | null> {
    if (length === 0) return (await this.stat(key)) ? new Uint8Array() : null;
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.#key(key),
          Range: `bytes=${start}-${start + length - 1}`,
        }),
      );
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      if (isNotFound(err)) return null;
      throw storageError(err, `get ${key.path}`);
    }
  }

  async getStream(key: ObjectKey): Promise<AsyncIterable<Uint8Array> | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      return (out.Body as AsyncIterable<Uint8Array> | undefined) ?? (async function* () {})();
    } catch (err) {
      if (isNotFound(err)) return null;
      throw storageError(err, `get ${key.path}`);
    }
  }

  async stat(key: ObjectKey): Promise<ObjectInfo | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      return { path: key.path, size: out.ContentLength ?? 0, modifiedAt: out.LastModified ?? null };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw storageError(err, `head ${key.path}`);
    }
  }

  async *list(tenant: string, prefix: string): AsyncIterable<ObjectInfo> {
    const root = this.#tenantPrefix(tenant);
    try {
      const pages = paginateListObjectsV2(
        { client: this.client, pageSize: 1000 },
        { Bucket: this.bucket, Prefix: `${root}${prefix}` },
      );
      for await (const page of pages) {
        for (const item of page.Contents ?? []) {
          if (item.Key)
            yield {
              path: item.Key.slice(root.length),
              size: item.Size ?? 0,
              modifiedAt: item.LastModified ?? null,
            };
        }
      }
    } catch (err) {
      throw storageError(err, `list ${prefix}`);
    }
  }

  async move(from: ObjectKey, to: ObjectKey): Promise<void> {
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: this.#key(to),
          CopySource: `${this.bucket}/${encodeURIComponent(this.#key(from)).replaceAll('%2F', '/')}`,
        }),
      );
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(from) }));
    } catch (err) {
      throw storageError(err, `move ${from.path}`);
    }
  }

  async delete(key: ObjectKey): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
    } catch (err) {
      if (isNotFound(err)) return;
      throw storageError(err, `delete ${key.path}`);
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** A backend over an S3-compatible bucket. */
export function s3Backend(config: S3BackendConfig): S3Backend {
  return new S3Backend(config);
}
