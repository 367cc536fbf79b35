// The queue's planner statistics follow its growth: enqueuing past what they last saw runs one ANALYZE in the
// background, after which pg_class knows the queue's size.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';

let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const reltuples = async (t: TestCore) => {
  const { rows } = await sql<{ n: number }>`
    SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'adm_queue'::regclass`.execute(
    t.core.internals.deps.db,
  );
  return Number(rows[0]?.n);
};

describe('queue statistics', () => {
  it('are refreshed once the combiner has enqueued past what they last saw', async () => {
    core = await testCore({ scheduler: { enabled: false }, policy: { maxQueued: 10_000 } });
    const stats = core.core.internals.deps.queueStats;
    expect(stats.analyzed).toBe(0);
    const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } } as const;
    const t = core;
    // 600 command runs (they stay queued: no driver).
    for (let i = 0; i < 20; i++)
      await Promise.all(Array.from({ length: 30 }, () => t.core.services.runs.create(t.admin, cmd)));
    await stats.settled();
    expect(stats.analyzed).toBe(1);
    expect(await reltuples(t)).toBeGreaterThanOrEqual(500);
  }, 60_000);

  it('are left alone when many runs passed through a queue that stayed short', async () => {
    core = await testCore({ scheduler: { enabled: false } });
    const stats = core.core.internals.deps.queueStats;
    // 600 enqueued, all claimed by the time the statistics are looked at: the queue is empty.
    stats.noteEnqueued(600);
    await stats.settled();
    expect(stats.skipped).toBe(1);
    expect(stats.analyzed).toBe(0);
  });

  it('are left alone below the threshold', async () => {
    core = await testCore({ scheduler: { enabled: false } });
    const t = core;
    const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } } as const;
    await Promise.all(Array.from({ length: 20 }, () => t.core.services.runs.create(t.admin, cmd)));
    await t.core.internals.deps.queueStats.settled();
    expect(t.core.internals.deps.queueStats.analyzed).toBe(0);
  });
});
