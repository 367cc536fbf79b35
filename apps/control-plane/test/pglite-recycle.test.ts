// A recycled PGlite (pglite-recycle.ts) is indistinguishable from a fresh one from the template: rows, sequences,
// session settings, LISTENs and planner statistics a test left are gone; a schema change is never handed on; a
// returned handle is dead. Compared against a fresh instance's own answers, not against expectations written here.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { createRecycler, workerRecycler } from './pglite-recycle.js';
import { migratedPglite } from './pglite-template.js';

// What a test can observe of a ledger: every table's rows, every sequence's next value, the session.
async function observe(pg: PGlite) {
  const tables = (
    await pg.query<{ name: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
       WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
    )
  ).rows.map((r) => r.name);
  const rows: Record<string, unknown[]> = {};
  for (const t of tables) rows[t] = (await pg.query(`SELECT * FROM ${t} ORDER BY 1`)).rows;
  const seqs = (
    await pg.query<{ name: string; last_value: string | null }>(
      `SELECT schemaname || '.' || sequencename AS name, last_value::text FROM pg_sequences ORDER BY 1`,
    )
  ).rows;
  const session = (
    await pg.query(`SELECT current_setting('statement_timeout') AS st, current_setting('synchronous_commit') AS sc,
      (SELECT count(*)::int FROM pg_listening_channels()) AS listening,
      (SELECT count(*)::int FROM pg_prepared_statements) AS prepared,
      (SELECT count(*)::int FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid WHERE c.relname = 'events') AS stats`)
  ).rows;
  return { rows, seqs, session };
}

// Writes of every kind a test makes: ledger rows (with a bigserial id), a session setting, a LISTEN, a prepared
// statement, planner statistics.
async function dirty(pg: PGlite): Promise<void> {
  await pg.exec(`INSERT INTO events (tenant_id, kind, run_id, payload, created_at)
    SELECT 'default', 'run.created', NULL, '{}'::jsonb, now() FROM generate_series(1, 50) g`);
  await pg.exec(`SET statement_timeout = '12s'; SET synchronous_commit = off; PREPARE p AS SELECT 1`);
  await pg.exec('ANALYZE events');
  await pg.listen('recycle_probe', () => undefined);
}

// This file's own recycler: its counts move only with what these tests do, whatever ran before in the worker
// and whatever EVERDICT_TEST_PGLITE_RECYCLE says (it decides only what testDatabase() uses); runs in every pass.
describe('recycled PGlite', () => {
  const recycler = createRecycler();
  const recycledPglite = () => recycler.acquire();
  const recycleStats = recycler.stats;
  const fresh: PGlite[] = [];
  afterAll(async () => {
    for (const p of fresh) await p.close();
    await recycler.drain();
  });

  it('hands on an instance a test wrote to, listened on and analysed as a fresh one answers', async () => {
    const reference = await migratedPglite();
    fresh.push(reference);
    const want = await observe(reference);
    expect(Object.keys(want.rows).length).toBeGreaterThan(20);

    const first = await recycledPglite();
    await dirty(first);
    expect(await observe(first)).not.toEqual(want); // the probe sees every kind of leftover
    await first.close();

    const reused = recycleStats.reused;
    const second = await recycledPglite();
    expect(recycleStats.reused, recycleStats.rejections.join('; ')).toBe(reused + 1); // it is the same instance, reset
    expect(await observe(second)).toEqual(want);
    // The sequences continue as a fresh instance's would: the next event id is the template's next.
    const next = async (pg: PGlite) =>
      (
        await pg.query<{ id: string }>(
          `INSERT INTO events (tenant_id, kind, payload, created_at) VALUES ('default', 'k', '{}', now()) RETURNING id::text`,
        )
      ).rows[0]?.id;
    expect(await next(second)).toBe(await next(reference));
    await second.close();
  });

  it('drops the LISTEN callbacks its borrower left: a notify on the next borrower reaches only its own', async () => {
    const first = await recycledPglite();
    const stale: string[] = [];
    await first.listen('recycle_chan', (p) => stale.push(p));
    await first.close();
    const reused = recycleStats.reused;
    const second = await recycledPglite();
    expect(recycleStats.reused, recycleStats.rejections.join('; ')).toBe(reused + 1);
    const mine: string[] = [];
    await second.listen('recycle_chan', (p) => mine.push(p));
    await second.exec(`NOTIFY recycle_chan, 'x'`);
    await second.query('SELECT 1'); // notifications are delivered after the statement that sent them
    expect(mine).toEqual(['x']);
    expect(stale).toEqual([]);
    await second.close();
  });

  it('a returned handle is dead: every call rejects, as a closed PGlite', async () => {
    const pg = await recycledPglite();
    await pg.close();
    expect(pg.closed).toBe(true);
    await expect(pg.query('SELECT 1')).rejects.toThrow(/closed/);
    await pg.close(); // twice is harmless
  });

  it('never hands on an instance whose schema a test changed: it is closed, the next one is fresh', async () => {
    const pg = await recycledPglite();
    await pg.exec('ALTER TABLE events ADD COLUMN recycle_probe int');
    const rejected = recycleStats.rejected.fingerprint;
    await pg.close();
    expect(recycleStats.rejected.fingerprint).toBe(rejected + 1);
    expect(recycleStats.rejections.at(-1)).toBe('fingerprint: relations,columns');
    const next = await recycledPglite();
    const { rows } = await next.query(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'recycle_probe'`,
    );
    expect(rows).toEqual([]);
    await next.close();
  });

  it('never hands on an instance left inside a transaction', async () => {
    const pg = await recycledPglite();
    await pg.exec(
      `BEGIN; INSERT INTO events (tenant_id, kind, payload, created_at) VALUES ('default', 'k', '{}', now())`,
    );
    const rejected = recycleStats.rejected.transaction;
    await pg.close();
    expect(recycleStats.rejected.transaction).toBe(rejected + 1);
  });

  it('one worker recycler even when the module is evaluated again (a file calling vi.resetModules())', async () => {
    // A query string makes the module runner evaluate the file as a second module, as after a module reset.
    const again = './pglite-recycle.js?evaluated-again';
    const second: typeof import('./pglite-recycle.js') = await import(/* @vite-ignore */ again);
    expect(second.createRecycler).not.toBe(createRecycler); // really a second evaluation
    expect(second.workerRecycler()).toBe(workerRecycler());
  });
});
