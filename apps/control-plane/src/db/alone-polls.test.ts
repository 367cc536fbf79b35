// A control plane alone on its database (PGlite here: no other process can open it) spaces its fallback looks
// `alonePollMs` apart — 60 s in this core, against a 50 ms `pollMs` — so everything below must be driven by the
// announcement of what it waits for, never by a poll: a long-poll with nothing to lease looks once, not every
// 50 ms; a create answers a waiting long-poll at once; a run's head is sequenced into the head log, its
// trajectory sealed and a subscription fired on its facts, each within seconds (a poll would take 60). Each loop
// is first seen quiet — a skipped look recorded — so a second run is handled by its announcement alone.
// On the real core (a migrated PGlite) through the real app. (On live PostgreSQL the same file runs with one
// core: alone as well; test/listener-presence.pg.test.ts holds the switch back when a second one listens.)
import { encodeAttestationBody, type Hex } from '@everdict/runrecord';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { ALONE_POLL_MS, beforeFallback as soon } from '../../test/alone.js';
import { ADMIN_KEY, call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner, signTestInterval } from '../http/testing/runners.js';
import { journalRootOf } from '../runners/intervals.js';
import { fallbackPoll } from './fallback-poll.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({
    scheduler: { pollMs: 50, alonePollMs: ALONE_POLL_MS },
    headLog: { sthIntervalMs: 10 },
  });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

/**
 * A long-poll of 1 s with nothing to lease slept until its deadline, not on the 50-ms poll: its first sleep was for
 * (nearly) all of the second — on the poll it would be 50 ms, and ≈ 20 of them. (A wake, e.g. a fact a
 * previous test's run announced late, may add a sleep; it cannot shorten the first.)
 */
function sleptThrough(waits: { mock: { calls: unknown[][] } }) {
  const [first] = waits.mock.calls;
  expect(Number(first?.[0])).toBeGreaterThan(500);
  expect(waits.mock.calls.length).toBeLessThan(5);
}

it('is alone on its database', async () => {
  // PGlite: by construction; PostgreSQL (the live pass): once its presence has looked and seen no one else.
  await soon(async () =>
    expect(fallbackPoll(t.core.internals.ldb, 50, ALONE_POLL_MS).periodMs()).toBe(ALONE_POLL_MS),
  );
});

it('a runner lease long-poll with nothing to lease sleeps through, not every pollMs; a create answers one at once', async () => {
  const runner = await pairTestRunner(t.app);
  const waiters = t.core.internals.leaseWaiters;
  const waits = vi.spyOn(waiters, 'wait');
  try {
    expect(await leaseRuns(t.app, runner, 1, 1_000)).toEqual([]);
    sleptThrough(waits);
    const before = waiters.size;
    const answer = leaseRuns(t.app, runner, 1, 20_000);
    await soon(async () => expect(waiters.size).toBe(before + 1));
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await answer).map((l) => l.runId)).toEqual([(created.body.run as { id: string }).id]);
  } finally {
    waits.mockRestore();
  }
}, 60_000);

it('an agent-host turn long-poll with nothing to lease sleeps through, not every pollMs', async () => {
  const waits = vi.spyOn(t.core.internals.turnWaiters, 'wait');
  try {
    const res = await callInternal(t.app, 'POST', '/internal/agent/v1/leases', {
      holder: 'host-alone',
      free: 1,
      waitMs: 1_000,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.leases).toEqual([]);
    sleptThrough(waits);
  } finally {
    waits.mockRestore();
  }
}, 60_000);

/** The loops' recorded skips: each grows only while its loop is quiet (alone, nothing announced since its look). */
const skips = () => ({
  headLog: t.core.headLog?.skippedProbes ?? 0,
  outbox: t.core.internals.triggers?.skippedOutboxLooks ?? 0,
  seal: t.core.trajectoryJobs?.skippedSealPolls ?? 0,
});

/** Until each named loop has skipped a look since `before`: it looked last before now, and would not for 60 s. */
const quiet = (before: ReturnType<typeof skips>, loops: (keyof ReturnType<typeof skips>)[]) =>
  soon(async () => {
    const now = skips();
    for (const l of loops) expect(now[l], l).toBeGreaterThan(before[l]);
  });

it('an inline run settled on a quiet core: its head sequenced and a subscription fired, each at its facts', async () => {
  const headLog = t.core.headLog;
  if (!headLog) throw new Error('no head log');
  const { db } = t.core.internals.deps;
  const sub = await call(t.app, 'POST', '/subscriptions', {
    key: ADMIN_KEY,
    body: {
      name: 'on analysis',
      selector: { kind: 'run.settled', filter: { kind: 'analysis' } },
      runSpec: { kind: 'command', subject: { command: ['true'] } },
    },
  });
  expect(sub.status, JSON.stringify(sub.body)).toBe(201);
  const firings = async () =>
    (
      await db
        .selectFrom('subscription_firings')
        .select('outcome')
        .where('subscription_id', '=', (sub.body as { id: string }).id)
        .execute()
    ).map((f) => f.outcome);
  for (const n of [1, 2]) {
    const before = skips();
    const sizeBefore = await headLog.size();
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as { id: string }).id;
    await soon(async () => {
      const run = await db
        .selectFrom('runs')
        .select('status')
        .where('id', '=', runId)
        .executeTakeFirstOrThrow();
      expect(run.status).toBe('succeeded');
    });
    await soon(async () => expect(await headLog.size()).toBeGreaterThan(sizeBefore));
    await soon(async () => expect(await firings()).toEqual(Array(n).fill('created')));
    // Both loops quiet again before the next run: only its facts can make them look within the next minute.
    await quiet(before, ['headLog', 'outbox']);
  }
}, 60_000);

it('a runner-run trajectory is sealed at its settle’s facts on a quiet core', async () => {
  const runner = await pairTestRunner(t.app, { name: 'sealer' });
  const store = t.core.trajectories?.store;
  if (!store) throw new Error('no trajectory store');
  const { db } = t.core.internals.deps;
  for (let i = 0; i < 2; i++) {
    const before = skips();
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as { id: string }).id;
    // (The command runs the subscription above created may be leased alongside; they are left held.)
    const lease = (await leaseRuns(t.app, runner, 8)).find((l) => l.runId === runId);
    if (!lease) throw new Error(`${runId} not leased`);
    const events = [
      {
        type: 'log',
        seq: 0,
        ts: '2026-12-06T01:00:00.000Z',
        runId,
        level: 'info',
        message: 'hi',
        stream: 'stdout',
      },
    ];
    const post = (path: string, body: unknown) =>
      call(t.app, 'POST', `/runner/v1/runs/${runId}/${path}`, { key: runner.credential, body });
    expect((await post('events', { epoch: lease.epoch, events })).status).toBe(202);
    const attestation = encodeAttestationBody(
      signTestInterval(lease, runner.key.secretKey, { journalRoot: journalRootOf(events) as Hex }).body,
    );
    const done = await post('complete', { epoch: lease.epoch, outputs: {}, attestation });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await soon(async () => {
      const queued = await db
        .selectFrom('trajectory_seal_queue')
        .select('run_id')
        .where('run_id', '=', runId)
        .execute();
      expect(queued).toEqual([]);
      expect((await store.read('default', runId, { offset: 0, limit: 10 })).sealed).toBe(true);
    });
    await quiet(before, ['seal']);
  }
}, 60_000);
