// The artifact sweep on the real core: what no run needs is deleted — an upload its settled run does not claim,
// a lost attempt's upload, a staged upload left past its grace — and nothing a run still needs is: a claimed
// artifact (also when another run's dead upload shares its bytes) and an upload of a run still running.

import { blake3, bytesToHex } from '@everdict/runrecord';
import { stageArtifact } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  COMMAND_CAPS,
  completeTestLease,
  downloadTestArtifact,
  leaseCommandRun,
  leaseRuns,
  pairTestRunner,
  type TestLease,
  type TestRunner,
  uploadTestArtifact,
} from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const complete = (r: TestRunner, l: TestLease, artifacts: unknown[]) =>
  completeTestLease(t.app, r, l, artifacts);
const upload = (r: TestRunner, l: TestLease, path: string, body: string) =>
  uploadTestArtifact(t.app, r, l, path, body);

const leasedRun = (r: TestRunner) => leaseCommandRun(t.app, r);

const download = async (runId: string, path: string) => {
  const res = await downloadTestArtifact(t.app, runId, path);
  return { status: res.status, text: await res.text() };
};

const stored = async (address: string) =>
  (await t.core.trajectories!.store.backend.stat({
    tenant: 'default',
    path: `artifacts/blake3/${address.slice(7, 9)}/${address.slice(7)}`,
  })) !== null;

describe('the artifact sweep', () => {
  it('deletes what no run needs and keeps every artifact a run needs', async () => {
    const jobs = t.core.trajectoryJobs!;
    const a = await pairTestRunner(t.app, { name: 'sweep-a', capabilities: COMMAND_CAPS });

    // A settled run claims one of its two uploads.
    const settled = await leasedRun(a);
    const claimed = await upload(a, settled, 'report.txt', 'claimed bytes');
    const unclaimed = await upload(a, settled, 'scratch.txt', 'bytes nobody claims');
    expect((await complete(a, settled, [claimed])).status).toBe(200);

    // A run still running has uploaded, not yet claimed.
    const running = await leasedRun(a);
    const inFlight = await upload(a, running, 'partial.txt', 'bytes of a live attempt');

    // A lost attempt uploaded bytes of its own and a copy of the claimed ones; the next attempt claims nothing.
    const b = await pairTestRunner(t.app, { name: 'sweep-b', capabilities: COMMAND_CAPS });
    const lost = await leasedRun(b);
    const lostOwn = await upload(b, lost, 'lost.txt', 'bytes of a lost attempt');
    const lostCopy = await upload(b, lost, 'copy.txt', 'claimed bytes');
    expect(lostCopy.digest).toBe(claimed.digest);
    expect((await call(t.app, 'POST', `/runners/${b.id}/revoke`, { key: ADMIN_KEY })).status).toBe(200);
    const c = await pairTestRunner(t.app, { name: 'sweep-c', capabilities: COMMAND_CAPS });
    const [retry] = await leaseRuns(t.app, c, 1);
    expect(retry?.runId).toBe(lost.runId);
    expect((await complete(c, retry!, [])).status).toBe(200);

    // A staged upload that never reached its address (a crash between the two).
    const backend = t.core.trajectories!.store.backend;
    const leftover = await stageArtifact(backend, 'default', { path: 'x', body: Buffer.from('half way') });

    const counted = async (what: string) => {
      const m = /everdict_storage_deleted_total\{what="(\w+)"\} (\d+)/g;
      const text = await (await t.app.request('/metrics')).text();
      return Number([...text.matchAll(m)].find((x) => x[1] === what)?.[2] ?? 0);
    };
    const [artifactsBefore, uploadsBefore] = [await counted('artifact'), await counted('upload')];
    const [pass] = (await jobs.sweepArtifacts()).filter((p) => p.tenant === 'default');
    expect(new Set(pass?.deleted)).toEqual(new Set([unclaimed.digest, lostOwn.digest]));
    expect(pass?.uploadsDeleted).toBe(0);
    expect(await counted('artifact')).toBe(artifactsBefore + 2);
    for (const gone of [unclaimed, lostOwn]) expect(await stored(gone.digest)).toBe(false);
    for (const kept of [claimed, inFlight]) expect(await stored(kept.digest)).toBe(true);
    expect(await download(settled.runId, 'report.txt')).toEqual({ status: 200, text: 'claimed bytes' });

    // The running run claims its upload after the sweep, and serves it.
    expect((await complete(a, running, [inFlight])).status).toBe(200);
    expect(await download(running.runId, 'partial.txt')).toEqual({
      status: 200,
      text: 'bytes of a live attempt',
    });

    // A day on, the staged leftover goes too; a second sweep finds nothing else to delete.
    const later = new Date(Date.now() + 86_400_000 + 60_000);
    const [next] = (await jobs.sweepArtifacts(later)).filter((p) => p.tenant === 'default');
    expect(next).toMatchObject({ deleted: [], uploadsDeleted: 1 });
    expect(await counted('upload')).toBe(uploadsBefore + 1);
    expect(await backend.stat({ tenant: 'default', path: leftover.upload })).toBeNull();

    // Bytes the sweep deleted, uploaded again by a new run, are placed again and served.
    const again = await leasedRun(a);
    const back = await upload(a, again, 'scratch-again.txt', 'bytes nobody claims');
    expect(back.digest).toBe(unclaimed.digest);
    expect((await complete(a, again, [back])).status).toBe(200);
    expect(await download(again.runId, 'scratch-again.txt')).toEqual({
      status: 200,
      text: 'bytes nobody claims',
    });
  });

  it('an upload its lease ends under leaves no staged copy behind', async () => {
    const backend = t.core.trajectories!.store.backend;
    const r = await pairTestRunner(t.app, { name: 'sweep-refused', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const staged = async () => {
      const paths: string[] = [];
      for await (const o of backend.list('default', 'uploads/')) paths.push(o.path);
      return paths;
    };
    const before = await staged();
    // The body streams while the runner is revoked: the lease was good when the upload began, not at its listing.
    let reading!: () => void;
    const read = new Promise<void>((resolve) => {
      reading = resolve;
    });
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        sent++;
        if (sent === 1) return c.enqueue(new TextEncoder().encode('first half, '));
        reading();
        await finished;
        c.enqueue(new TextEncoder().encode('second half'));
        c.close();
      },
    });
    const answer = t.app.request(`/runner/v1/runs/${l.runId}/artifacts?epoch=${l.epoch}&path=late.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${r.credential}`, 'content-type': 'application/octet-stream' },
      body,
      duplex: 'half',
    } as RequestInit);
    await read;
    expect((await call(t.app, 'POST', `/runners/${r.id}/revoke`, { key: ADMIN_KEY })).status).toBe(200);
    finish();
    const res = await answer;
    expect(res.status).toBe(409);
    expect(await staged()).toEqual(before);
    const hex = bytesToHex(blake3(new TextEncoder().encode('first half, second half')));
    expect(await stored(`blake3:${hex}`)).toBe(false);
  });
});
