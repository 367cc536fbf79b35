// Marked hot statements become named server-side prepared statements on each pooled connection (planned once,
// not per call); unmarked queries are sent as kysely compiled them. Live PostgreSQL only (PGlite has no pool).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { prepared } from '../src/db/prepared.js';
import { notifyAfterCommit } from '../src/ledger/events.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/prepared.pg.test.ts');

describe.runIf(LIVE_PG)('prepared hot statements', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let ledger: Awaited<ReturnType<typeof openDatabase>>;

  beforeAll(async () => {
    live = await createLiveDatabase();
    ledger = await openDatabase({ databaseUrl: live.url, poolSize: 1 });
  }, 60_000);

  afterAll(async () => {
    await ledger?.close();
    await live?.drop();
  });

  const named = async () => {
    const { rows } = await sql<{ name: string; statement: string }>`
      SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(ledger.db);
    return rows;
  };

  it('prepares a marked statement once per connection and reuses it; plain queries stay unnamed', async () => {
    const marked = (n: number) =>
      sql<{ v: number }>`${sql.raw(prepared('probe'))} SELECT ${n}::int + 1 AS v`.execute(ledger.db);
    expect((await marked(1)).rows[0]?.v).toBe(2);
    expect((await marked(41)).rows[0]?.v).toBe(42); // same text, new parameters: the same statement
    await sql`SELECT 1 AS plain`.execute(ledger.db);
    const list = await named();
    const probes = list.filter((r) => r.name.startsWith('probe_'));
    expect(probes).toHaveLength(1);
    expect(probes[0]?.statement).toContain('/* prepared:probe */');
    expect(list.some((r) => r.statement.includes('plain'))).toBe(false);
  });

  it('gives a different text under the same marker its own statement', async () => {
    await sql`${sql.raw(prepared('probe'))} SELECT ${1}::int AS a, 2 AS b`.execute(ledger.db);
    const probes = (await named()).filter((r) => r.name.startsWith('probe_'));
    expect(probes).toHaveLength(2);
    expect(new Set(probes.map((p) => p.name)).size).toBe(2);
  });

  it('sends the after-commit NOTIFY as a named statement, one per shape of channels', async () => {
    await notifyAfterCommit(ledger.db, ['probe_channel']);
    await notifyAfterCommit(ledger.db, ['other_channel']);
    // Any channel: the same text (channels are parameters).
    expect((await named()).filter((r) => r.name.startsWith('notify_after_'))).toHaveLength(1);
  });
});
