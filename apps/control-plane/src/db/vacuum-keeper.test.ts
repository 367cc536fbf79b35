// The vacuum keeper (vacuum-keeper.ts): where no autovacuum runs, the dead row versions runs leave behind are
// vacuumed by autovacuum's rule — the tables due, and only those. On the suite's database (PGlite; the live
// server in the PostgreSQL pass: test/vacuum-keeper.pg.test.ts covers what only a server has).
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { openDatabase } from './database.js';
import type { Db } from './tx.js';
import { keeperIdleReason, VacuumKeeper, vacuumDue } from './vacuum-keeper.js';

let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const ECHO = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'v' } } } as const;

/** Dead row versions of a table as the statistics show them (this backend's pending counts flushed first). */
async function dead(db: Db, table: string): Promise<number> {
  await sql`SELECT pg_stat_force_next_flush()`.execute(db);
  const { rows } = await sql<{ n: string | number }>`
    SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relname = ${table}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

describe('the vacuum keeper', () => {
  it('vacuums the tables runs left dead rows in, once they are due, and no table that is not', async () => {
    // A timer that never fires on its own: the test looks (`check`) when it wants to.
    core = await testCore({ vacuum: { checkMs: 3_600_000, minDead: 100, mode: 'always' } });
    const keeper = core.core.internals.vacuum;
    if (!keeper) throw new Error('no keeper');
    expect(keeper.idleReason).toBeNull();
    const db = core.core.internals.deps.db;
    const t = core;
    const before = await dead(db, 'adm_queue');
    // 150 analysis runs: each one's queue entry and lease are inserted and deleted.
    const runs = await t.core.services.runs.createMany(
      t.admin,
      Array.from({ length: 150 }, () => ECHO),
    );
    const ids = runs.map((r) => ('created' in r ? r.created.run.id : ''));
    await eventually(async () => {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM runs WHERE id = ANY(${ids}) AND status = 'succeeded'`.execute(db);
      return rows[0]?.n === 150 ? true : undefined;
    }, 30_000);
    // The statistics reach the keeper once every backend has reported (at once on PGlite: one backend).
    await eventually(async () => ((await dead(db, 'adm_queue')) - before >= 150 ? true : undefined), 30_000);
    const tenantsDead = await dead(db, 'tenants');
    expect(tenantsDead).toBeLessThan(100); // not due: it must be left alone

    // Both due tables, each once its statistics arrive: on a server the leases' dead rows are counted by the
    // backends that deleted them, which report within 10 s when idle (PGSTAT_IDLE_INTERVAL), not with the queue's.
    await eventually(async () => {
      await keeper.check();
      return keeper.vacuumed.has('adm_queue') && keeper.vacuumed.has('run_leases') ? true : undefined;
    }, 30_000);
    expect(keeper.vacuumed.has('tenants')).toBe(false);
    expect(await dead(db, 'adm_queue')).toBeLessThan(100);

    // Nothing due any more: a look runs no VACUUM.
    const vacuums = keeper.vacuums;
    await keeper.check();
    expect(keeper.vacuums).toBe(vacuums);
  }, 60_000);

  it('stops with the core, a look after that runs nothing', async () => {
    core = await testCore({ vacuum: { checkMs: 3_600_000, mode: 'always' }, scheduler: { enabled: false } });
    const keeper = core.core.internals.vacuum;
    if (!keeper) throw new Error('no keeper');
    await core.close();
    core = null;
    await keeper.check(); // the database is closed: a look would fail loudly in the log, not run
    expect(keeper.vacuums).toBe(0);
  });

  it('logs a spell of failing looks once, not at every look', async () => {
    const ldb = await openDatabase({ pglite: new PGlite(), migrate: false });
    const logged: string[] = [];
    const keeper = new VacuumKeeper(ldb.db, ldb.dialect, (_level, msg) => logged.push(msg), {
      checkMs: 3_600_000,
      mode: 'always',
    });
    await ldb.close(); // every look fails from here on
    await keeper.check();
    await keeper.check();
    await keeper.check();
    expect(logged).toEqual(['vacuum failed']);
    expect(keeper.vacuums).toBe(0);
  });

  it('is not there unless asked for', async () => {
    core = await testCore({ scheduler: { enabled: false } });
    expect(core.core.internals.vacuum).toBeNull();
  });
});

describe("the keeper's rule", () => {
  it("is autovacuum's: due from minDead + scale × live dead rows, never below minDead", () => {
    fc.assert(
      fc.property(
        fc.nat(1e7),
        fc.nat(1e7),
        fc.nat(10_000),
        fc.double({ min: 0, max: 2, noNaN: true }),
        (live, deadRows, minDead, scale) => {
          const due = vacuumDue(live, deadRows, { minDead, scale });
          expect(due).toBe(deadRows >= minDead + scale * live);
          if (deadRows < minDead) expect(due).toBe(false);
          // More dead rows never make a due table not due; more live ones never make a table due.
          if (due) expect(vacuumDue(live, deadRows + 1, { minDead, scale })).toBe(true);
          if (!due) expect(vacuumDue(live + 1, deadRows, { minDead, scale })).toBe(false);
        },
      ),
    );
  });

  it('keeps only where no autovacuum runs, and never without dead-row statistics', () => {
    const pg = (autovacuum: string, trackCounts = 'on') =>
      ({ dialect: 'postgres', autovacuum, trackCounts }) as const;
    expect(keeperIdleReason(pg('on'), 'auto')).toMatch(/runs autovacuum/);
    expect(keeperIdleReason(pg('off'), 'auto')).toBeNull();
    expect(keeperIdleReason(pg('on'), 'always')).toBeNull();
    // PGlite has no autovacuum worker, whatever its setting says.
    expect(keeperIdleReason({ dialect: 'pglite', autovacuum: 'on', trackCounts: 'on' }, 'auto')).toBeNull();
    expect(keeperIdleReason(pg('off', 'off'), 'always')).toMatch(/track_counts/);
  });
});
