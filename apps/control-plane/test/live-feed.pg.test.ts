// The live feed on PostgreSQL with concurrent writers: a fact whose transaction commits after a higher id was
// read is still delivered — late, once (services/feed-cursors.ts). A second connection holds the fact's
// transaction open while the feed reads past it (a condition on what the feed saw, never a sleep). Live
// PostgreSQL only (PGlite runs one transaction at a time: no fact commits behind a higher id there).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from './core.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/live-feed.pg.test.ts');

const echo = (message: string) => ({ kind: 'analysis', subject: { config: { fn: 'echo', message } } });

describe.runIf(LIVE_PG)('the live feed and a fact committed behind a higher id', () => {
  let t: TestCore;
  let holder: pg.Client;
  beforeAll(async () => {
    t = await testCore();
    holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
  }, 120_000);
  afterAll(async () => {
    await holder?.end();
    await t?.close();
  });

  it('is delivered once its transaction commits, and every fact exactly once', async () => {
    const seen: string[] = [];
    const sub = await t.core.services.events.subscribe(t.admin, {}, (e) => {
      seen.push(e.id);
      return true;
    });
    try {
      // A fact whose id is taken now and whose transaction commits later.
      await holder.query('BEGIN');
      const held = await holder.query<{ id: string }>(
        `INSERT INTO events (tenant_id, kind, payload, created_at)
         VALUES ($1, 'test.late', '{}'::jsonb, now()) RETURNING id::text`,
        [t.admin.tenantId],
      );
      const lateId = held.rows[0]!.id;
      // Facts with higher ids commit meanwhile, and the feed reads past the held one.
      const { run } = await t.core.services.runs.create(t.admin, echo('ahead'));
      await eventually(async () => seen.some((id) => BigInt(id) > BigInt(lateId)) || undefined);
      expect(seen).not.toContain(lateId);
      await holder.query('COMMIT');
      await eventually(async () => seen.includes(lateId) || undefined);
      await eventually(async () => {
        const r = await t.core.services.runs.get(t.admin, run.id);
        return r.status === 'succeeded' || undefined;
      });
      const all = (await t.core.services.events.list(t.admin, { limit: 1000 })).items.map((e) => e.id);
      await eventually(async () => all.every((id) => seen.includes(id)) || undefined);
      expect(new Set(seen).size).toBe(seen.length);
    } finally {
      await sub.close();
    }
  });
});
