// Migration 0024 on a database whose head log has pending rows at 0023: they become one batch row, in their
// id order, that the sequencer's reader expands back to the same leaves; `runs` gets fillfactor 30; `down`
// restores a row per leaf, in order. (One pending row per inserting statement: log/head-log.test.ts.)
import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { unmigratedDatabase } from '../../../test/db.js';
import { pendingLeaves } from '../../log/store.js';
import { migrateToLatest } from '../database.js';
import { migrationProvider } from './index.js';

const fresh = unmigratedDatabase;

const head = (c: string) => c.repeat(64);

describe('migration 0024 (head log batches) upgrades a database with pending leaves', () => {
  let done: (() => Promise<void>) | undefined;
  afterEach(async () => done?.());

  it('keeps the pending leaves in order as one batch row, sets the runs fillfactor, and goes back down', async () => {
    const { h, drop } = await fresh();
    done = async () => {
      await h.close();
      await drop();
    };
    const db = h.db;
    const migrator = new Migrator({ db, provider: migrationProvider });
    expect((await migrator.migrateTo('0023_agent_hosts')).error).toBeUndefined();
    await sql`INSERT INTO log_pending (tenant_id, run_id, group_id, length, head)
      VALUES ('t', 'r2', NULL, 1, ${head('a')}), ('t', 'r1', 'g', 1, ${head('b')}), ('t', 'r2', NULL, 2, ${head('c')})`.execute(
      db,
    );
    const leaves = [
      ['r2', null, 1, head('a')],
      ['r1', 'g', 1, head('b')],
      ['r2', null, 2, head('c')],
    ];

    expect(await migrateToLatest(db)).toContain('0024_log_batches');
    const { rows } = await sql<{
      n: number;
    }>`SELECT jsonb_array_length(leaves) AS n FROM log_pending`.execute(db);
    expect(rows.map((r) => Number(r.n))).toEqual([3]);
    const read = await pendingLeaves(db, 10);
    expect(read.map((l) => [l.runId, l.groupId, l.length, l.head])).toEqual(leaves);
    const { rows: ff } = await sql<{
      o: string[];
    }>`SELECT reloptions AS o FROM pg_class WHERE relname = 'runs'`.execute(db);
    expect(ff[0]?.o).toContain('fillfactor=30');

    expect((await migrator.migrateTo('0023_agent_hosts')).error).toBeUndefined();
    const { rows: back } = await sql<{
      run_id: string;
      group_id: string | null;
      length: number;
      head: string;
    }>`
      SELECT run_id, group_id, length, head FROM log_pending ORDER BY id`.execute(db);
    expect(back.map((r) => [r.run_id, r.group_id, Number(r.length), r.head])).toEqual(leaves);
  });
});
