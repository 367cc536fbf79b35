// Streams a body into one object: a single PutObject when it fits in one part, otherwise a multipart
// upload of `partSize` parts (only one part buffered at a time), aborted if anything fails.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { PutStreamResult } from '../backend.js';

/** Cuts a stream of pieces into buffers of exactly `size` bytes (the last one shorter). */
async function* parts(body: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const piece of body) {
    let rest = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (pendingBytes + rest.length >= size) {
      const take = size - pendingBytes;
      pending.push(rest.subarray(0, take));
      yield Buffer.concat(pending, size);
      rest = rest.subarray(take);
      pending = [];
      pendingBytes = 0;
    }
    if (rest.length > 0) {
      pending.push(Buffer.from(rest)); // copy: the producer may reuse its buffer
      pendingBytes += rest.length;
    }
  }
  if (pendingBytes > 0 || pending.length > 0) yield Buffer.concat(pending, pendingBytes);
}

export async function uploadStream(
  client: S3Client,
  bucket: string,
  key: string,
  body: AsyncIterable<Uint8Array>,
  partSize: number,
): Promise<PutStreamResult> {
  const it = parts(body, partSize)[Symbol.asyncIterator]();
  const first = await it.next();
  const firstPart = first.done ? Buffer.alloc(0) : first.value;
  const second = first.done ? first : await it.next();
  if (second.done) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: firstPart }));
    return { size: firstPart.length, parts: 1 };
  }
  const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const uploadId = created.UploadId!;
  const done: { ETag: string; PartNumber: number }[] = [];
  let size = 0;
  const send = async (part: Buffer) => {
    const PartNumber = done.length + 1;
    const out = await client.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber, Body: part }),
    );
    done.push({ ETag: out.ETag!, PartNumber });
    size += part.length;
  };
  try {
    await send(firstPart);
    await send(second.value);
    for (let next = await it.next(); !next.done; next = await it.next()) await send(next.value);
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: done },
      }),
    );
    return { size, parts: done.length };
  } catch (err) {
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
      .catch(() => undefined);
    throw err;
  }
}
