// A runner's events live in the run's trajectory only; `runner_journals` says where each epoch's journal sits.
// A second attempt continues the trajectory after the first's events (its lease's seqFrom), its completion's
// journal root is recomputed from ITS events in the trajectory, a stale epoch's events are refused and leave
// the trajectory as it was, and artifacts are stored in the trajectory store (content-addressed, per tenant).
import { encodeAttestationBody, type Hex } from '@everdict/runrecord';
import { readArtifactBytes } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  leaseRuns,
  pairTestRunner,
  signTestInterval,
  type TestLease,
  type TestRunner,
} from '../http/testing/runners.js';
import { journalRootOf } from './intervals.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

type Runner = TestRunner;
type LeaseBody = TestLease;

const pairRunner = (name: string) =>
  pairTestRunner(t.app, {
    name,
    capabilities: { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 4 },
  });

const leaseOne = async (r: Runner): Promise<LeaseBody> => {
  const [l] = await leaseRuns(t.app, r, 1);
  if (!l) throw new Error('no lease');
  return l;
};

const logs = (runId: string, from: number, texts: string[]) =>
  texts.map((message, i) => ({
    type: 'log',
    seq: from + i,
    ts: '2026-12-02T01:00:00.000Z',
    runId,
    level: 'info',
    message,
    stream: 'stdout',
  }));

const signed = (r: Runner, l: LeaseBody, events: unknown[]) =>
  encodeAttestationBody(
    signTestInterval(l, r.key.secretKey, {
      meter: 'cgroup-cpu-model',
      journalRoot: journalRootOf(events) as Hex,
    }).body,
  );

const post = (r: Runner, path: string, body: unknown) =>
  call(t.app, 'POST', path, { key: r.credential, body });

describe('runner journals in the trajectory', () => {
  it('a second attempt continues the trajectory; its root covers its own events; stale events change nothing', async () => {
    const a = await pairRunner('a');
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status).toBe(201);
    const first = await leaseOne(a);
    expect(first.seqFrom).toBe(0);
    const firstEvents = logs(first.runId, 0, ['one', 'two']);
    const ev = await post(a, `/runner/v1/runs/${first.runId}/events`, { epoch: 1, events: firstEvents });
    expect(ev.status, JSON.stringify(ev.body)).toBe(202);

    // Runner a is revoked: its lease ends, the run requeues; runner b takes the second attempt.
    const revoked = await call(t.app, 'POST', `/runners/${a.id}/revoke`, { key: ADMIN_KEY });
    expect(revoked.status).toBe(200);
    const b = await pairRunner('b');
    const second = await leaseOne(b);
    expect(second.runId).toBe(first.runId);
    expect(second.epoch).toBe(2);
    expect(second.seqFrom).toBe(2);

    // The stale attempt's events: refused (401 for a revoked runner), the trajectory unchanged.
    const store = t.core.trajectories!.store;
    const stale = await post(a, `/runner/v1/runs/${first.runId}/events`, {
      epoch: 1,
      events: logs(first.runId, 2, ['late']),
    });
    expect([401, 409]).toContain(stale.status);
    // Events before this interval's journal are refused too.
    const early = await post(b, `/runner/v1/runs/${first.runId}/events`, {
      epoch: 2,
      events: logs(first.runId, 1, ['overwrite']),
    });
    expect(early.status).toBe(409);
    expect((await store.read('default', first.runId, { offset: 0, limit: 100 })).eventCount).toBe(2);

    const secondEvents = logs(first.runId, 2, ['three']);
    const ev2 = await post(b, `/runner/v1/runs/${first.runId}/events`, { epoch: 2, events: secondEvents });
    expect(ev2.status, JSON.stringify(ev2.body)).toBe(202);
    // A re-sent batch (a retry after a lost answer) is skipped, not doubled.
    const again = await post(b, `/runner/v1/runs/${first.runId}/events`, { epoch: 2, events: secondEvents });
    expect(again.status).toBe(202);

    // An artifact goes into the trajectory store.
    const put = await t.app.request(
      `/runner/v1/runs/${first.runId}/artifacts?epoch=2&path=${encodeURIComponent('report.txt')}`,
      {
        method: 'PUT',
        headers: { authorization: `Bearer ${b.credential}`, 'content-type': 'application/octet-stream' },
        body: 'artifact bytes',
      },
    );
    expect(put.status).toBe(201);
    const stored = (await put.json()) as { address: string; size: number };
    expect(stored.address).toMatch(/^blake3:[0-9a-f]{64}$/);
    expect(stored.size).toBe(14);
    expect((await readArtifactBytes(store.backend, 'default', stored.address)).toString()).toBe(
      'artifact bytes',
    );

    // A root over both attempts' events is not this interval's journal; its own events are.
    const wrong = await post(b, `/runner/v1/runs/${first.runId}/complete`, {
      epoch: 2,
      outputs: {},
      attestation: signed(b, second, [...firstEvents, ...secondEvents]),
    });
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('attestation_mismatch');
    const done = await post(b, `/runner/v1/runs/${first.runId}/complete`, {
      epoch: 2,
      outputs: {},
      attestation: signed(b, second, secondEvents),
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const page = await store.read('default', first.runId, { offset: 0, limit: 100 });
    expect(page.items.map((e) => [e.seq, (e as { message?: string }).message])).toEqual([
      [0, 'one'],
      [1, 'two'],
      [2, 'three'],
    ]);
  });
});

describe('a cancelled runner interval', () => {
  it('leaves no executed segment: the record closes cancelled and verifies; the heartbeat answers lost', async () => {
    const r = await pairRunner('c');
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['sleep', '60'] } },
    });
    expect(created.status).toBe(201);
    const l = await leaseOne(r);
    const cancel = await call(t.app, 'POST', `/runs/${l.runId}/cancel`, { key: ADMIN_KEY, body: {} });
    expect(cancel.status).toBe(200);
    const hb = await post(r, '/runner/v1/heartbeat', { leases: [{ runId: l.runId, epoch: l.epoch }] });
    expect(hb.body.lost).toEqual([l.runId]);
    const rec = await call(t.app, 'GET', `/runs/${l.runId}/record`, { key: ADMIN_KEY });
    const wire = rec.body.wire as { segments: { kind: string; reason?: string }[] };
    expect(wire.segments.map((s) => s.kind)).toEqual(['closed']);
    expect(wire.segments[0]?.reason).toBe('cancelled');
    expect((rec.body.verify as { ok: boolean }).ok).toBe(true);
    // The cancelled attempt's late completion is refused.
    const late = await post(r, `/runner/v1/runs/${l.runId}/complete`, {
      epoch: l.epoch,
      outputs: {},
      attestation: signed(r, l, []),
    });
    expect(late.status).toBe(409);
  });
});
