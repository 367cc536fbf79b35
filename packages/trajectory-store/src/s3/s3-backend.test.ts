import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type S3rverHandle, startS3rver } from '../../test/s3rver.js';
import { describeBackendContract } from '../contract.js';
import { type S3Backend, s3Backend } from './s3-backend.js';

let server: S3rverHandle;
let prefixes = 0;
// The test files share one process (vitest.config.ts: isolate: false): the credentials are put back after.
const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
const restore = (name: string, value: string | undefined) => {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
};

beforeAll(async () => {
  server = await startS3rver();
  // Credentials come from the SDK's default chain (the environment here), as in production.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
});
afterAll(async () => {
  restore('AWS_ACCESS_KEY_ID', saved.id);
  restore('AWS_SECRET_ACCESS_KEY', saved.secret);
  await server?.stop();
});

function backend(prefix: string, partSize?: number): S3Backend {
  return s3Backend({
    bucket: server.bucket,
    endpoint: server.endpoint,
    region: 'us-east-1',
    prefix,
    ...(partSize ? { partSize } : {}),
  });
}

describeBackendContract('S3 (s3rver)', async () => {
  const prefix = `contract-${prefixes++}/`;
  return { open: async () => backend(prefix, 5 * 1024 * 1024) };
});

describe('S3 backend specifics', () => {
  it('uploads a large object in parts and a small one in one request', async () => {
    const b = backend('parts/', 5 * 1024 * 1024);
    const big = Buffer.alloc(11 * 1024 * 1024, 7);
    async function* body() {
      for (let i = 0; i < big.length; i += 300_000) yield big.subarray(i, i + 300_000);
    }
    expect(await b.putStream({ tenant: 't', path: 'big' }, body())).toEqual({ size: big.length, parts: 3 });
    expect(Buffer.from((await b.get({ tenant: 't', path: 'big' }))!).equals(big)).toBe(true);
    async function* small() {
      yield big.subarray(0, 1000);
      yield big.subarray(0, 24);
    }
    expect(await b.putStream({ tenant: 't', path: 'small' }, small())).toEqual({ size: 1024, parts: 1 });
    await b.close();
  });

  // The contract's tails poll while another instance writes; S3 answers such a read with the whole object or
  // none. The stand-in must too (test/s3rver-server.mjs), or the contract fails on a half-written record.
  it('a reader polling while an object is written sees none of it or all of it', async () => {
    const b = backend('atomic/');
    const whole = Buffer.alloc(2 * 1024 * 1024, 3);
    const seen = new Set<number>();
    let writing = true;
    const reads = (async () => {
      while (writing)
        for (const i of [0, 1, 2, 3]) seen.add((await b.get({ tenant: 't', path: `o${i}` }))?.length ?? 0);
    })();
    for (const i of [0, 1, 2, 3]) await b.put({ tenant: 't', path: `o${i}` }, whole);
    writing = false;
    await reads;
    expect([...seen].filter((n) => n !== 0 && n !== whole.length)).toEqual([]);
    await b.close();
  });

  it('keeps each tenant under its own prefix', async () => {
    const b = backend('tenancy/');
    await b.put({ tenant: 'a/b', path: 'x.json' }, Buffer.from('1'));
    const keys: string[] = [];
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    const out = await b.client.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: 'tenancy/' }));
    for (const o of out.Contents ?? []) keys.push(o.Key!);
    expect(keys).toEqual(['tenancy/tenants/a.2fb/x.json']);
    await b.close();
  });

  it('lists more than one page (1000 keys) in order', async () => {
    const b = backend('many/');
    const names = Array.from({ length: 1005 }, (_, i) => `chunks/${String(i).padStart(5, '0')}`);
    for (let i = 0; i < names.length; i += 25)
      await Promise.all(names.slice(i, i + 25).map((n) => b.put({ tenant: 't', path: n }, Buffer.from(n))));
    const listed: string[] = [];
    for await (const o of b.list('t', 'chunks/')) listed.push(o.path);
    expect(listed).toEqual(names);
    await b.close();
  }, 120_000);
});
