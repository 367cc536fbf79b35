// Migration 0035: the head log's trigger finds a segment's run by `runs_pkey`, whatever the age of its plan. Its
// statement is planned once per connection, at the first settle; before, a plan made while `runs` was small kept
// scanning the whole table at every settle as it grew. Here: settles plan it on a small table, the table grows
// four-hundred-fold on the same connection, and one more segment's insert must not scan `runs` sequentially
// (counted by the backend's own statistics, before and after it).
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../../test/core.js';

let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const ECHO = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'p' } } } as const;

describe('the head log trigger (migration 0035)', () => {
  it('reaches a grown runs table by its primary key, not by a scan planned when it was small', async () => {
    // One pooled connection: the settles below plan the trigger on the connection the test then uses.
    core = await testCore({ poolSize: 1 });
    const t = core;
    const db = t.core.internals.deps.db;
    const created = await t.core.services.runs.createMany(
      t.admin,
      Array.from({ length: 8 }, () => ECHO),
    );
    const ids = created.map((r) => ('created' in r ? r.created.run.id : ''));
    await eventually(async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM record_segments
        WHERE run_id = ANY(${ids}) AND kind = 'closed'`.execute(db);
      return rows[0]?.n === ids.length ? true : undefined;
    }, 30_000);

    await db.connection().execute(async (c) => {
      // The table grows to ≈ 400 rows (copies of a settled run) — no invalidation of a plan comes with that.
      await sql`INSERT INTO runs
        SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object('id', r.id || '-' || g))).*
        FROM runs r, generate_series(1, 400) g WHERE r.id = ${ids[0]}`.execute(c);
      // The backend's counts not yet reported (this transaction's and earlier ones'): the insert's are the delta.
      const scans = async () =>
        (
          await sql<{ seq: number; idx: number }>`
            SELECT seq_scan::int AS seq, idx_scan::int AS idx FROM pg_stat_xact_user_tables
            WHERE relname = 'runs'`.execute(c)
        ).rows[0] ?? { seq: 0, idx: 0 };
      await sql`BEGIN`.execute(c);
      try {
        const before = await scans();
        await sql`INSERT INTO record_segments
          SELECT (jsonb_populate_record(NULL::record_segments, to_jsonb(s) || '{"idx": 99}'::jsonb)).*
          FROM record_segments s WHERE s.run_id = ${ids[1]} AND s.idx = 0`.execute(c);
        const after = await scans();
        const { rows: pending } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM log_pending
          WHERE leaves @> ${JSON.stringify([{ r: ids[1], l: 100 }])}::jsonb`.execute(c);
        expect(pending[0]?.n).toBe(1); // the trigger ran and logged the segment
        expect(after.seq - before.seq).toBe(0);
        expect(after.idx - before.idx).toBeGreaterThan(0);
      } finally {
        await sql`ROLLBACK`.execute(c);
      }
    });
  }, 60_000);
});
