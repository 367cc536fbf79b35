// The time-driven loops of a control plane alone on its database (PGlite here: no other process can open it):
// the lease sweep, the schedules' read and the vacuum keeper tick every few milliseconds in this core, but look
// only when a fact was heard, when the earliest deadline their last look read comes, or once per `alonePollMs`
// — 60 s here. So each must be seen quiet (a skipped look recorded) and still act on time: a lease nobody renews
// is requeued at its expiry, a queued run past its TTL is failed at it, a schedule created fires its first slot and the next ones on time (a
// fallback look would take 60). On the real core through the real app. (On live PostgreSQL the same file runs
// with one core: alone as well, by presence.)
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { ALONE_POLL_MS, beforeFallback as soon } from '../../test/alone.js';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({
    scheduler: { pollMs: 50, alonePollMs: ALONE_POLL_MS, lease: { leaseMs: 1_500, sweepMs: 20 } },
  });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const dispatch = () => {
  const d = t.core.internals.dispatch;
  if (!d) throw new Error('no dispatch loop');
  return d;
};

it('a lease nobody renews is requeued at its expiry, the sweep quiet before it', async () => {
  const runner = await pairTestRunner(t.app);
  const created = await call(t.app, 'POST', '/runs', {
    key: ADMIN_KEY,
    body: { kind: 'command', subject: { command: ['true'] } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const runId = (created.body.run as { id: string }).id;
  const [lease] = await leaseRuns(t.app, runner, 1);
  expect(lease?.runId).toBe(runId);
  const leasedAt = Date.now();
  // The grant's fact made the sweep look and read the lease's expiry; until then it skips its ticks.
  const skipped = dispatch().skippedSweeps;
  await soon(() => expect(dispatch().skippedSweeps).toBeGreaterThan(skipped + 5));
  const { db } = t.core.internals.deps;
  const row = () =>
    db
      .selectFrom('runs')
      .select(['status', 'lost_attempts'])
      .where('id', '=', runId)
      .executeTakeFirstOrThrow();
  expect(await row()).toMatchObject({ status: 'running', lost_attempts: 0 });
  // No heartbeat: requeued once the 1.5 s lease ran out — by the deadline, not a fallback look a minute away.
  await soon(async () => expect(await row()).toMatchObject({ status: 'queued', lost_attempts: 1 }));
  expect(Date.now() - leasedAt).toBeGreaterThanOrEqual(1_400);
}, 60_000);

it('a queued run past its expiry is failed at it, the sweep quiet before it', async () => {
  const created = await call(t.app, 'POST', '/runs', {
    key: ADMIN_KEY,
    body: { kind: 'command', subject: { command: ['true'] }, ttlSec: 2 },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const run = created.body.run as { id: string; expiresAt: string };
  // The create's fact made the sweep look and read the run's expiry; until then it skips its ticks.
  const skipped = dispatch().skippedSweeps;
  await soon(() => expect(dispatch().skippedSweeps).toBeGreaterThan(skipped + 5));
  const { db } = t.core.internals.deps;
  const status = async () =>
    (await db.selectFrom('runs').select('status').where('id', '=', run.id).executeTakeFirstOrThrow()).status;
  expect(await status()).toBe('queued');
  // Failed once its 2 s ran out — by the deadline read, not a fallback look a minute away.
  await soon(async () => expect(await status()).toBe('failed'));
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(run.expiresAt));
}, 60_000);

it('a schedule created on a quiet core fires its first slot at once and the next ones on time', async () => {
  const triggers = t.core.internals.triggers;
  if (!triggers) throw new Error('no trigger loop');
  const { db } = t.core.internals.deps;
  // Quiet first: the schedules' read skipped (there is none, and nothing was written).
  const skipped = triggers.skippedScheduleReads;
  await soon(() => expect(triggers.skippedScheduleReads).toBeGreaterThan(skipped));
  const sub = await call(t.app, 'POST', '/subscriptions', {
    key: ADMIN_KEY,
    body: {
      name: 'every other second',
      schedule: { cron: '*/2 * * * * *' },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    },
  });
  expect(sub.status, JSON.stringify(sub.body)).toBe(201);
  const id = (sub.body as { id: string }).id;
  const slots = async () =>
    (
      await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM schedule_slots WHERE subscription_id = ${id}`.execute(db)
    ).rows[0]?.n ?? 0;
  // Written here: read at the next tick, its first slot fired.
  await soon(async () => expect(await slots()).toBeGreaterThanOrEqual(1));
  // The next slot is the read's deadline: fired two seconds later, the second between skipped.
  const between = triggers.skippedScheduleReads;
  await soon(async () => expect(await slots()).toBeGreaterThanOrEqual(3));
  expect(triggers.skippedScheduleReads).toBeGreaterThan(between);
  const off = await call(t.app, 'PATCH', `/subscriptions/${id}`, {
    key: ADMIN_KEY,
    body: { enabled: false },
  });
  expect(off.status, JSON.stringify(off.body)).toBe(200);
}, 60_000);

it('the vacuum keeper looks at a fact, not every tick', async () => {
  // A core of its own: the keeper on (PGlite has no autovacuum), ticking every 20 ms.
  const own = await testApp({
    scheduler: { pollMs: 50, alonePollMs: ALONE_POLL_MS },
    vacuum: { checkMs: 20, mode: 'always' },
  });
  try {
    const keeper = own.core.internals.vacuum;
    if (!keeper) throw new Error('no keeper');
    const looks = vi.spyOn(keeper, 'check');
    await soon(() => expect(keeper.skippedLooks).toBeGreaterThan(20));
    const quietLooks = looks.mock.calls.length;
    expect(quietLooks).toBeLessThanOrEqual(1); // the first tick's, at most
    const created = await call(own.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await soon(() => expect(looks.mock.calls.length).toBeGreaterThan(quietLooks));
  } finally {
    await own.close();
  }
}, 60_000);
