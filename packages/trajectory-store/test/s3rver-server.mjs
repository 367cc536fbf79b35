// An s3rver (the S3 stand-in for tests) in its own process, with the OpenSSL legacy provider its
// continuation tokens need: `node --openssl-legacy-provider s3rver-server.mjs <dir> <bucket>`.
// Prints `PORT <n>` once listening; stops on SIGTERM or when stdin closes.
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory,
  silent: true,
  configureBuckets: [{ name: bucket }],
});

// S3 makes a PUT atomic: a GET or a listing sees the whole new object or none of it. s3rver's filesystem store
// writes the object file in place and answers the PUT before its bytes are flushed, so a reader polling while a
// writer stores (a tail beside a seal) could read half a record. This store writes the bytes, their MD5 and the
// metadata first, then renames the object file into place — S3's guarantee, which the backend relies on.
const store = server.store;
store.putObject = async (object) => {
  const content = Buffer.isBuffer(object.content) ? object.content : await collect(object.content);
  const md5 = createHash('md5').update(content).digest('hex');
  const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
  await mkdir(path.dirname(objectPath), { recursive: true });
  const partial = `${objectPath}.${randomUUID()}.partial`;
  await writeFile(partial, content);
  await store.putMetadata(object.bucket, object.key, object.metadata, md5);
  await rename(partial, objectPath);
  return { size: content.length, md5 };
};

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const { port } = await server.run();
process.stdout.write(`PORT ${port}\n`);
const stop = () => server.close().finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
