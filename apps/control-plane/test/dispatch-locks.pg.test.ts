// Row locks held by another transaction, against the one-statement claim and settle (live PostgreSQL only:
// PGlite has one connection). A claim skips a run whose row is held (a cancel in progress) instead of waiting
// for it; a settle that waited for a run row writes it only if the row is still the version it read (under
// READ COMMITTED the locked row is re-read at its latest version). Runs only with EVERDICT_TEST_DATABASE_URL.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { type Finished, planSettle, writeSettle } from '../src/scheduler/batch-transitions.js';
import { claimAndStart } from '../src/scheduler/claim-start.js';
import { INLINE_KINDS } from '../src/scheduler/dispatch-loop.js';
import type { Principal } from '../src/services/index.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/dispatch-locks.pg.test.ts');
const KEY = 'evk_dispatch_locks_test_key_0000000';

describe.runIf(LIVE_PG)('claim and settle against held rows', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let core: Core;
  let admin: Principal;
  let other: pg.Client;

  beforeAll(async () => {
    live = await createLiveDatabase();
    core = await startCore({ databaseUrl: live.url, bootstrapKey: KEY, scheduler: { enabled: false } });
    admin = await core.services.auth.authenticate(KEY);
    other = new pg.Client({ connectionString: live.url });
    await other.connect();
  }, 60_000);

  afterAll(async () => {
    await other?.end();
    await core?.close();
    await live?.drop();
  });

  const create = async (message: string) =>
    (
      await core.services.runs.create(admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message } },
      })
    ).run.id;
  const finished = (runId: string): Finished => ({
    tenant: 'default',
    runId,
    event: { type: 'succeed' },
    extras: { outputs: { summary: 'ok', exitCode: 0 } },
  });
  /** Resolves once some other backend of this database waits on a lock. */
  const someoneWaits = async () => {
    for (let i = 0; i < 200; i++) {
      const r = await other.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (r.rows[0].n > 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('nobody waited on a lock');
  };

  it('skips a queued run whose row is held, without waiting, and claims it once released', async () => {
    const held = await create('held');
    const free = await create('free');
    await other.query('BEGIN');
    await other.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [held]);
    try {
      const t0 = Date.now();
      const started = await claimAndStart(core.internals.deps.db, 4, new Date(), INLINE_KINDS);
      expect(started.map((s) => s.runId)).toEqual([free]);
      expect(Date.now() - t0).toBeLessThan(2_000);
    } finally {
      await other.query('ROLLBACK');
    }
    const later = await claimAndStart(core.internals.deps.db, 4, new Date(), INLINE_KINDS);
    expect(later.map((s) => s.runId)).toEqual([held]);
    // Settle both for the next test's counters.
    const deps = core.internals.deps;
    expect(
      (
        await writeSettle(deps.db, await planSettle(deps.db, deps, [finished(held), finished(free)]))
      ).ids.sort(),
    ).toEqual([held, free].sort());
  });

  it('a settle that waited for a run row leaves it out if the row changed meanwhile', async () => {
    const x = await create('x');
    const y = await create('y');
    const deps = core.internals.deps;
    expect(await claimAndStart(deps.db, 2, new Date(), INLINE_KINDS)).toHaveLength(2);
    const plan = await planSettle(deps.db, deps, [finished(x), finished(y)]);
    await other.query('BEGIN');
    await other.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [x]);
    const writing = writeSettle(deps.db, plan);
    await someoneWaits();
    await other.query("UPDATE runs SET expires_at = '2100-01-01T00:00:00Z' WHERE id = $1", [x]);
    await other.query('COMMIT');
    expect((await writing).ids).toEqual([y]);
    const rows = await deps.db
      .selectFrom('runs')
      .select(['id', 'status'])
      .where('id', 'in', [x, y])
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({
      [x]: 'running',
      [y]: 'succeeded',
    });

    // A holder that changes nothing (locks, then rolls back) does not stop the write.
    const again = await planSettle(deps.db, deps, [finished(x)]);
    await other.query('BEGIN');
    await other.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [x]);
    const second = writeSettle(deps.db, again);
    await someoneWaits();
    await other.query('ROLLBACK');
    expect((await second).ids).toEqual([x]);
    expect((await core.services.runs.record(admin, x)).verify).toMatchObject({ ok: true, length: 2 });
    const ten = await deps.db
      .selectFrom('adm_tenants_now')
      .select(['running', 'queued'])
      .executeTakeFirstOrThrow();
    expect(ten).toEqual({ running: 0, queued: 0 });
  });
});
