// OTLP spans naming a run a runner executes (real core, PGlite): the runner's journal takes the run's
// trajectory seqs from its lease's `seqFrom` on, so spans imported while a lease is held are materialized as an
// imported trajectory instead of taking the seqs the runner posts next; spans imported while no lease is held
// append to the run's trajectory, and the next lease's journal starts after them. Both records stay exact: the
// runner's later batches append, its completion's journal root is its own events, nothing collides.

import type { TraceEvent } from '@everdict/run-model';
import { encodeAttestationBody, type Hex } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  COMMAND_CAPS,
  leaseRuns,
  pairTestRunner,
  signTestInterval,
  type TestLease,
  type TestRunner,
} from '../http/testing/runners.js';
import { journalRootOf } from '../runners/intervals.js';
import { agentTrace, otlpJson } from './otlp-fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

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

const post = (r: TestRunner, path: string, body: unknown) =>
  call(t.app, 'POST', path, { key: r.credential, body });

async function leaseOne(r: TestRunner): Promise<TestLease> {
  const [l] = await leaseRuns(t.app, r, 1);
  if (!l) throw new Error('no lease');
  return l;
}

/** POST /v1/traces of one trace's spans under a resource naming `runId`. */
async function exportTrace(traceId: string, runId: string): Promise<void> {
  const res = await call(t.app, 'POST', '/v1/traces', {
    key: ADMIN_KEY,
    body: otlpJson(agentTrace(traceId), { 'everdict.run_id': runId }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function trajectory(runId: string): Promise<TraceEvent[]> {
  return (await t.core.trajectories!.store.read('default', runId, { offset: 0, limit: 1000 }))
    .items as TraceEvent[];
}

describe('OTLP import into a run a runner executes', { timeout: 120_000 }, () => {
  it('mid-interval spans do not take the runner’s seqs; the next lease starts after the runner’s events and the imports', async () => {
    // A runner is registered (a command run needs one to be placed); it asks for a lease later.
    const a = await pairTestRunner(t.app, { name: 'otlp-a', capabilities: COMMAND_CAPS });
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as { id: string }).id;

    // Queued, no lease: the spans append to the run's trajectory.
    const [before, during, between] = ['b1'.repeat(16), 'b2'.repeat(16), 'b3'.repeat(16)];
    await exportTrace(before, runId);
    const imported = (await trajectory(runId)).length;
    expect(imported).toBeGreaterThan(0);

    // The first lease's journal starts after them.
    const first = await leaseOne(a);
    expect(first.runId).toBe(runId);
    expect(first.seqFrom).toBe(imported);
    const firstEvents = logs(runId, first.seqFrom, ['one', 'two']);
    const ev1 = await post(a, `/runner/v1/runs/${runId}/events`, { epoch: first.epoch, events: firstEvents });
    expect(ev1.status, JSON.stringify(ev1.body)).toBe(202);

    // Mid-interval: the spans are materialized as an imported trajectory, the run's trajectory untouched.
    await exportTrace(during, runId);
    expect((await trajectory(runId)).length).toBe(imported + 2);
    const listed = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${during}`);
    const items = listed.body.items as { trajectoryId: string; eventCount: number }[];
    expect(items).toHaveLength(1);
    expect(items[0]!.eventCount).toBeGreaterThan(0);

    // The runner's next batch still appends at the seqs it numbered.
    const more = logs(runId, first.seqFrom + 2, ['three']);
    const ev2 = await post(a, `/runner/v1/runs/${runId}/events`, { epoch: first.epoch, events: more });
    expect(ev2.status, JSON.stringify(ev2.body)).toBe(202);
    expect((ev2.body as { eventCount: number }).eventCount).toBe(3);

    // The interval ends (runner a revoked: the run requeues); spans imported now append after its journal.
    expect((await call(t.app, 'POST', `/runners/${a.id}/revoke`, { key: ADMIN_KEY })).status).toBe(200);
    await exportTrace(between, runId);
    const afterBetween = (await trajectory(runId)).length;
    expect(afterBetween).toBeGreaterThan(imported + 3);

    // The next epoch's journal continues after both; its events append and its completion verifies.
    const b = await pairTestRunner(t.app, { name: 'otlp-b', capabilities: COMMAND_CAPS });
    const second = await leaseOne(b);
    expect(second.runId).toBe(runId);
    expect(second.epoch).toBe(first.epoch + 1);
    expect(second.seqFrom).toBe(afterBetween);
    const secondEvents = logs(runId, second.seqFrom, ['four']);
    const ev3 = await post(b, `/runner/v1/runs/${runId}/events`, {
      epoch: second.epoch,
      events: secondEvents,
    });
    expect(ev3.status, JSON.stringify(ev3.body)).toBe(202);
    const attestation = encodeAttestationBody(
      signTestInterval(second, b.key.secretKey, {
        meter: 'cgroup-cpu-model',
        journalRoot: journalRootOf(secondEvents) as Hex,
      }).body,
    );
    const done = await post(b, `/runner/v1/runs/${runId}/complete`, {
      epoch: second.epoch,
      outputs: {},
      attestation,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);

    // One trajectory, seqs 0… without a gap: imported spans, runner a's journal, imported spans, runner b's.
    const all = await trajectory(runId);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    const messages = all
      .filter((e) => e.type === 'log')
      .map((e) => [e.seq, (e as { message: string }).message]);
    expect(messages).toEqual([
      [imported, 'one'],
      [imported + 1, 'two'],
      [imported + 2, 'three'],
      [afterBetween, 'four'],
    ]);
    expect(all.slice(imported + 3, afterBetween).every((e) => e.type !== 'log')).toBe(true);
  });
});

describe('OTLP import into a run the inline lane executes', { timeout: 120_000 }, () => {
  let inline: TestApp;
  beforeAll(async () => {
    inline = await testApp({ scheduler: { enabled: true, pollMs: 50 } });
  }, 300_000);
  afterAll(async () => {
    await inline?.close();
  });

  it('still appends to its trajectory: its lease is this process’s, with no runner journal', async () => {
    const created = await call(inline.app, 'POST', '/runs', {
      body: { kind: 'analysis', subject: { config: { fn: 'sleep', ms: 60_000 } } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as { id: string }).id;
    await vi.waitFor(
      async () => expect((await call(inline.app, 'GET', `/runs/${runId}`)).body.status).toBe('running'),
      { timeout: 30_000, interval: 20 },
    );
    const res = await call(inline.app, 'POST', '/v1/traces', {
      body: otlpJson(agentTrace('c9'.repeat(16)), { 'everdict.run_id': runId }),
    });
    expect(res.status).toBe(200);
    const page = await inline.core.trajectories!.store.read('default', runId, { offset: 0, limit: 100 });
    expect(page.items.length).toBeGreaterThan(0);
    expect((await call(inline.app, 'POST', `/runs/${runId}/cancel`, { body: {} })).status).toBe(200);
  });
});
