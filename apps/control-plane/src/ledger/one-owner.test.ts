// One owner per column (issue 10 §3, migration 0017): a run's depth, child count and start are its admission
// slot's, never a copy on `runs`; the ledger's interval start is epoch ms. A duplicate column coming back, or
// a read that stops joining the slot, fails here.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { claimAndStart } from '../scheduler/claim-start.js';
import { INLINE_KINDS } from '../scheduler/dispatch-loop.js';

const echo = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } };

describe('one owner per run column', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  it('runs has no depth, children or start column; its interval start is epoch ms', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const { rows } = await sql<{ column_name: string; data_type: string }>`
      SELECT column_name, data_type FROM information_schema.columns
      WHERE table_name = 'runs' AND table_schema = current_schema()`.execute(t.core.internals.deps.db);
    const cols = new Map(rows.map((r) => [r.column_name, r.data_type]));
    expect(cols.has('id')).toBe(true);
    for (const dup of ['causal_depth', 'children_count', 'started_at', 'depth', 'children'])
      expect(cols.has(dup)).toBe(false);
    expect(cols.get('interval_started_at')).toBe('bigint');
    expect(cols.get('updated_at')).toBe('bigint');
  });

  it("a run's causalDepth and startedAt are its slot's depth and started_at", async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const db = t.core.internals.deps.db;
    const root = await t.core.services.runs.create(t.admin, echo);
    const child = await t.core.services.runs.create(t.admin, echo, { causedByRunId: root.run.id });
    const grandchild = await t.core.services.runs.create(t.admin, echo, { causedByRunId: child.run.id });
    expect([root, child, grandchild].map((c) => c.run.causalDepth)).toEqual([0, 1, 2]);
    expect(grandchild.run.startedAt).toBeUndefined();

    // The slot is the one place: a changed slot depth is what every read answers.
    await db.updateTable('adm_slots').set({ depth: 7 }).where('run_id', '=', grandchild.run.id).execute();
    expect((await t.core.services.runs.get(t.admin, grandchild.run.id)).causalDepth).toBe(7);
    const listed = await t.core.services.runs.list(t.admin, { causedBy: child.run.id });
    expect(listed.items.map((r) => [r.id, r.causalDepth])).toEqual([[grandchild.run.id, 7]]);

    // Started by the claim: startedAt is the slot's started_at (epoch ms), made ISO only in the view.
    const now = new Date(Date.now() + 5);
    expect(await claimAndStart(db, 3, now, INLINE_KINDS)).toHaveLength(3);
    for (const id of [root.run.id, child.run.id, grandchild.run.id]) {
      const slot = await db
        .selectFrom('adm_slots')
        .select('started_at')
        .where('run_id', '=', id)
        .executeTakeFirstOrThrow();
      expect(Number(slot.started_at)).toBe(now.getTime());
      const run = await t.core.services.runs.get(t.admin, id);
      expect(run.status).toBe('running');
      expect(run.startedAt).toBe(now.toISOString());
      const row = await db
        .selectFrom('runs')
        .select(['interval_started_at', 'updated_at'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(Number(row.interval_started_at)).toBe(now.getTime());
      // The claim's transition time: epoch ms in the ledger, ISO only in the answer.
      expect(Number(row.updated_at)).toBe(now.getTime());
      expect(run.updatedAt).toBe(now.toISOString());
    }
  });
});
