// Many small artifacts in one call (`POST /runner/v1/runs/:id/artifacts:batch`), on the real core: each file
// stored and listed under the lease as a single upload would be, a file past the bound answered 413 in its place
// (the others still stored), a lease that is gone or bad input refusing the whole batch with nothing staged or
// listed, a repeat taken as the original, and a move that fails leaving nothing listed.
import { blake3, bytesToHex } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  COMMAND_CAPS,
  completeTestLease,
  downloadTestArtifact,
  leaseCommandRun,
  pairTestRunner,
  type TestLease,
  type TestRunner,
} from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [], artifactMaxBytes: 1024 });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const address = (s: string) => `blake3:${bytesToHex(blake3(new TextEncoder().encode(s)))}`;
const batch = (r: TestRunner, l: Pick<TestLease, 'runId' | 'epoch'>, files: unknown, epoch = l.epoch) =>
  call(t.app, 'POST', `/runner/v1/runs/${l.runId}/artifacts:batch`, {
    key: r.credential,
    body: { epoch, files },
  });
const listed = async (runId: string) =>
  (
    await t.core.internals.deps.db
      .selectFrom('runner_artifacts')
      .select(['path', 'address', 'size'])
      .where('run_id', '=', runId)
      .orderBy('path')
      .execute()
  ).map((a) => ({ ...a, size: Number(a.size) }));
/** The tenant's staged uploads and stored artifacts. */
const storedObjects = async () => {
  const paths: string[] = [];
  for await (const o of t.core.trajectories!.store.backend.list('default', '')) paths.push(o.path);
  return paths.filter((p) => p.startsWith('uploads/') || p.startsWith('artifacts/')).sort();
};

describe('POST /runner/v1/runs/:id/artifacts:batch', () => {
  it('stores and lists each file, answers one past the bound 413 in its place; the run completes claiming them', async () => {
    const r = await pairTestRunner(t.app, { name: 'batcher', capabilities: COMMAND_CAPS });
    const l = await leaseCommandRun(t.app, r);
    const big = 'y'.repeat(1025);
    const res = await batch(r, l, [
      { path: 'a.txt', content: b64('alpha') },
      { path: 'big.bin', content: b64(big) },
      { path: 'sub/b.txt', content: b64('beta') },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toEqual([
      { path: 'a.txt', status: 201, address: address('alpha'), size: 5 },
      {
        path: 'big.bin',
        status: 413,
        code: 'artifact_too_large',
        detail: 'an artifact is limited to 1024 bytes',
        maxBytes: 1024,
      },
      { path: 'sub/b.txt', status: 201, address: address('beta'), size: 4 },
    ]);
    expect(await listed(l.runId)).toEqual([
      { path: 'a.txt', address: address('alpha'), size: 5 },
      { path: 'sub/b.txt', address: address('beta'), size: 4 },
    ]);
    expect((await storedObjects()).filter((p) => p.startsWith('uploads/'))).toEqual([]);
    // Sent again (a lost answer): the same answers, listed once.
    const again = await batch(r, l, [
      { path: 'a.txt', content: b64('alpha') },
      { path: 'sub/b.txt', content: b64('beta') },
    ]);
    expect((again.body.results as { address: string }[]).map((x) => x.address)).toEqual([
      address('alpha'),
      address('beta'),
    ]);
    expect(await listed(l.runId)).toHaveLength(2);
    const claim = (name: string, content: string) => ({
      name,
      uri: `artifact:${address(content)}`,
      bytes: content.length,
      digest: address(content),
    });
    const unstored = await completeTestLease(t.app, r, l, [claim('big.bin', big)]);
    expect(unstored.status).toBe(409);
    const done = await completeTestLease(t.app, r, l, [claim('a.txt', 'alpha'), claim('sub/b.txt', 'beta')]);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const fetched = await downloadTestArtifact(t.app, l.runId, 'sub/b.txt', ADMIN_KEY);
    expect(fetched.status).toBe(200);
    expect(await fetched.text()).toBe('beta');
  });

  it('refuses the whole batch for a lease that is gone, or bad input: nothing staged or listed', async () => {
    const r = await pairTestRunner(t.app, { name: 'refused', capabilities: COMMAND_CAPS });
    const l = await leaseCommandRun(t.app, r);
    const before = await storedObjects();
    const one = [{ path: 'x.txt', content: b64('x') }];
    const refusals: [unknown, number, string, number?][] = [
      [one, 409, 'stale_lease', l.epoch + 1],
      [[...one, ...one], 400, 'validation_failed'],
      [[{ path: '../up.txt', content: b64('x') }], 400, 'validation_failed'],
      [[{ path: '/abs.txt', content: b64('x') }], 400, 'validation_failed'],
      [[{ path: 'x.txt', content: 'not base64!' }], 400, 'validation_failed'],
      [[], 400, 'validation_failed'],
      [
        Array.from({ length: 257 }, (_, i) => ({ path: `f${i}`, content: b64('x') })),
        400,
        'validation_failed',
      ],
    ];
    for (const [files, status, code, epoch] of refusals) {
      const res = await batch(r, l, files, epoch);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.code).toBe(code);
    }
    expect(await storedObjects()).toEqual(before);
    expect(await listed(l.runId)).toEqual([]);
    // Revoked: its next batch is 401, and nothing of it is stored.
    expect((await call(t.app, 'POST', `/runners/${r.id}/revoke`, { key: ADMIN_KEY })).status).toBe(200);
    expect((await batch(r, l, one)).status).toBe(401);
    expect(await storedObjects()).toEqual(before);
  });

  it('a move that fails: 503, and nothing of the batch is listed or left staged', async () => {
    const r = await pairTestRunner(t.app, { name: 'unplaced', capabilities: COMMAND_CAPS });
    const l = await leaseCommandRun(t.app, r);
    const backend = t.core.trajectories!.store.backend;
    // The second file's shard directory is a file in the way: its move fails after the listing committed.
    let content = '';
    let shard = '';
    do {
      content = `unplaceable ${Math.random()}`;
      shard = `artifacts/blake3/${address(content).slice('blake3:'.length, 'blake3:'.length + 2)}`;
    } while ((await storedObjects()).some((p) => p.startsWith(`${shard}/`)));
    await backend.put({ tenant: 'default', path: shard }, new TextEncoder().encode('in the way'));
    const before = await storedObjects();
    const res = await batch(r, l, [
      { path: 'first.txt', content: b64(`placeable ${Math.random()}`) },
      { path: 'second.txt', content: b64(content) },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    // The first file's bytes were placed (content-addressed, harmless); the second's staged copy is gone, and
    // neither is listed past the failure that the runner was told of — except what was placed.
    const after = await storedObjects();
    expect(after.filter((p) => p.startsWith('uploads/'))).toEqual([]);
    expect(after.filter((p) => !before.includes(p)).every((p) => p.startsWith('artifacts/'))).toBe(true);
    expect((await listed(l.runId)).map((a) => a.path)).not.toContain('second.txt');
    await backend.delete({ tenant: 'default', path: shard });
    // Sent again once the store is well: both stored and listed.
    const retried = await batch(r, l, [
      { path: 'first.txt', content: b64('first again') },
      { path: 'second.txt', content: b64(content) },
    ]);
    expect(retried.status).toBe(200);
    expect((await listed(l.runId)).map((a) => a.path)).toEqual(['first.txt', 'second.txt']);
  });
});
