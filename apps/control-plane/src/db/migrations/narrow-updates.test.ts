// Migration 0022 on a database that holds data at 0021: every run row keeps its content (the transition
// columns move to the end of the row), the running slots' expected ends are backfilled, and from then on
// the trigger keeps adm_slot_ends exact while the slot updates no longer touch an index on `status`.
import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { unmigratedDatabase } from '../../../test/db.js';
import { migrationProvider } from './index.js';

const TAIL = [
  'usage',
  'error',
  'outputs',
  'ended_at',
  'record_head',
  'record_length',
  'trajectory_open',
  'status',
  'updated_at',
  'attempt',
  'interval_started_at',
  'interval_head',
];

const at0021 = unmigratedDatabase;

function run(id: string, status: string, extra = '') {
  return sql.raw(`INSERT INTO runs (id, tenant_id, kind, status, lifetime, class, created_by, created_at, updated_at,
      envelope_id, subject, origin, attach, outputs, usage, unit_id, grants_id, record_head, record_length,
      interval_started_at, interval_head, attempt${extra ? ', ended_at, error' : ''})
    VALUES ('${id}', 't', 'analysis', '${status}', 'task', 'interactive', 'k', now(), 1000, 'root:t',
      '{"config":{"fn":"echo","message":"${id}"}}', '{"actor":"k"}', '[]', '{"summary":"${id}"}', '{"costUsd":0}',
      'u', 'g', 'h_${id}', 2, ${status === 'running' ? "2000, 'ih'" : 'NULL, NULL'}, 1${extra})`);
}

function slot(id: string, status: string, started: number | null, expected: number | null) {
  return sql.raw(`INSERT INTO adm_slots (run_id, tenant, kind, cause, class, lifetime, status, depth, envelope_id,
      member, expected_duration_ms, admitted_at, started_at)
    VALUES ('${id}', 't', 'analysis', 'member', 'interactive', 'task', '${status}', 0, 'root:t', true, ${expected ?? 'NULL'},
      900, ${started ?? 'NULL'})`);
}

describe('migration 0022 (narrow updates) upgrades a database with data', () => {
  let done: (() => Promise<void>) | undefined;
  afterEach(async () => done?.());

  it('keeps every run row, moves the transition columns last, backfills and keeps the slot ends', async () => {
    const { h, drop } = await at0021();
    done = async () => {
      await h.close();
      await drop();
    };
    const db = h.db;
    const to = await new Migrator({ db, provider: migrationProvider }).migrateTo('0021_released_counters');
    expect(to.error).toBeUndefined();
    await sql`INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', now())`.execute(db);
    await run('r1', 'queued').execute(db);
    await run('r2', 'running').execute(db);
    await run('r3', 'failed', `, now(), '{"code":"x"}'`).execute(db);
    await slot('r1', 'queued', null, 60_000).execute(db);
    await slot('r2', 'running', 5_000, 60_000).execute(db);
    await slot('r3', 'failed', 5_000, 60_000).execute(db);
    await slot('r4', 'running', 7_000, null).execute(db);
    const content = sql<{ id: string; j: unknown }>`SELECT id, to_jsonb(r) AS j FROM runs r ORDER BY id`;
    const before = (await content.execute(db)).rows;

    // Up to 0022 exactly: later migrations may add columns to `runs` (0030: lost_attempts, after the tail).
    const up = await new Migrator({ db, provider: migrationProvider }).migrateTo('0022_narrow_updates');
    expect(up.error).toBeUndefined();
    expect(up.results?.map((r) => r.migrationName)).toContain('0022_narrow_updates');

    expect((await content.execute(db)).rows).toEqual(before);
    const cols = await sql<{ attname: string }>`SELECT attname FROM pg_attribute
      WHERE attrelid = 'runs'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(db);
    expect(cols.rows.map((c) => c.attname).slice(-TAIL.length)).toEqual(TAIL);
    const slotCols = await sql<{ attname: string }>`SELECT attname FROM pg_attribute
      WHERE attrelid = 'adm_slots'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(db);
    expect(slotCols.rows.map((c) => c.attname).slice(-2)).toEqual(['started_at', 'status']);
    const slots = await sql<{
      run_id: string;
      status: string;
    }>`SELECT run_id, status FROM adm_slots ORDER BY run_id`.execute(db);
    expect(slots.rows.map((r) => `${r.run_id}:${r.status}`)).toEqual([
      'r1:queued',
      'r2:running',
      'r3:failed',
      'r4:running',
    ]);
    const ends = sql<{
      run_id: string;
      end_ms: string;
    }>`SELECT run_id, end_ms::text FROM adm_slot_ends ORDER BY run_id`;
    expect((await ends.execute(db)).rows).toEqual([{ run_id: 'r2', end_ms: '65000' }]);
    const idx = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname = 'adm_slots_active'`.execute(db);
    expect(idx.rows[0]?.n).toBe(0);

    // Defaults and NOT NULL came back with the moved columns.
    const bare = (usage: string) =>
      sql.raw(`INSERT INTO runs (id, tenant_id, kind, status, lifetime, class, created_by, created_at, updated_at,
        envelope_id, subject, origin, attach, outputs, unit_id, grants_id, record_head${usage ? ', usage' : ''})
        VALUES ('r9', 't', 'analysis', 'queued', 'task', 'interactive', 'k', now(), 1, 'root:t', '{}', '{}', '[]',
        '{}', 'u', 'g', 'h'${usage ? `, '${usage}'` : ''})`);
    await expect(bare('').execute(db)).rejects.toThrow(/usage/);
    await bare('{}').execute(db);
    const r9 = await sql<{ attempt: number; record_length: number; trajectory_open: boolean }>`
      SELECT attempt, record_length, trajectory_open FROM runs WHERE id = 'r9'`.execute(db);
    expect(r9.rows[0]).toEqual({ attempt: 0, record_length: 0, trajectory_open: false });

    // The trigger: a claim adds the end, a settle removes it, a requeue removes it, a slot without a duration
    // never has one.
    await sql`UPDATE adm_slots SET status = 'running', started_at = 10000 WHERE run_id = 'r1'`.execute(db);
    await sql`UPDATE adm_slots SET status = 'succeeded' WHERE run_id = 'r2'`.execute(db);
    await sql`UPDATE adm_slots SET status = 'succeeded' WHERE run_id = 'r4'`.execute(db);
    await slot('r6', 'running', 20_000, 1_000).execute(db);
    expect((await ends.execute(db)).rows).toEqual([
      { run_id: 'r1', end_ms: '70000' },
      { run_id: 'r6', end_ms: '21000' },
    ]);
    await sql`UPDATE adm_slots SET status = 'queued', started_at = NULL WHERE run_id = 'r1'`.execute(db);
    expect((await ends.execute(db)).rows).toEqual([{ run_id: 'r6', end_ms: '21000' }]);
    // The later migrations upgrade this data too.
    expect((await new Migrator({ db, provider: migrationProvider }).migrateToLatest()).error).toBeUndefined();
  });
});
