// The run tables' planner statistics follow their growth: creating past what they last saw runs one ANALYZE
// in the background (pg_class then knows their size), unless something else refreshed them meanwhile.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { RunStats } from './run-stats.js';

let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const reltuples = async (t: TestCore, table: string) => {
  const { rows } = await sql<{ n: number }>`
    SELECT reltuples::float8 AS n FROM pg_class WHERE oid = ${table}::regclass`.execute(
    t.core.internals.deps.db,
  );
  return Number(rows[0]?.n);
};

const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } } as const;

describe('run statistics', () => {
  it('are refreshed once the combiner has created past what they last saw', async () => {
    core = await testCore({ scheduler: { enabled: false }, policy: { maxQueued: 10_000 } });
    const t = core;
    const stats = t.core.internals.deps.runStats;
    expect(await reltuples(t, 'runs')).toBeLessThan(0); // never analyzed
    for (let i = 0; i < 20; i++)
      await Promise.all(Array.from({ length: 30 }, () => t.core.services.runs.create(t.admin, cmd)));
    await stats.settled();
    expect(stats.analyzed).toBe(1);
    expect(await reltuples(t, 'runs')).toBeGreaterThanOrEqual(500);
    expect(await reltuples(t, 'adm_slots')).toBeGreaterThanOrEqual(500);
  }, 60_000);

  it('are left alone when something else refreshed them (autovacuum, another replica)', async () => {
    core = await testCore({ scheduler: { enabled: false }, policy: { maxQueued: 10_000 } });
    const t = core;
    for (let i = 0; i < 20; i++)
      await Promise.all(Array.from({ length: 30 }, () => t.core.services.runs.create(t.admin, cmd)));
    await t.core.internals.deps.runStats.settled();
    const fresh = new RunStats(t.core.internals.deps.db);
    fresh.noteCreated(600); // reltuples is known and newer than this instance has seen: adopted, no ANALYZE
    await fresh.settled();
    expect(fresh.analyzed).toBe(0);
  }, 60_000);

  it('are left alone below the threshold', async () => {
    core = await testCore({ scheduler: { enabled: false } });
    const t = core;
    await Promise.all(Array.from({ length: 20 }, () => t.core.services.runs.create(t.admin, cmd)));
    await t.core.internals.deps.runStats.settled();
    expect(t.core.internals.deps.runStats.analyzed).toBe(0);
    expect(await reltuples(t, 'runs')).toBeLessThan(0);
  });
});
