// The outbox's settled horizon is this database's (src/ledger/horizon.ts): a writing transaction held open in
// ANOTHER database of the same server no longer holds the subscriptions consumer and the feed back, while one
// held open in this database still does (its facts could land behind the cursor). Live PostgreSQL only: PGlite
// runs one transaction at a time and has no second database. Each step is one consumer call whose answer is
// asserted — no sleeping, no waiting for something not to happen.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../src/http/testing/harness.js';
import { readSettled } from '../src/ledger/events.js';
import { consumeOnce } from '../src/scheduler/subscriptions-consumer.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';
import { type RunnerApp, runnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/outbox-horizon.pg.test.ts');

describe.runIf(LIVE_PG)('the outbox horizon is this database’s', () => {
  let t: RunnerApp;
  let elsewhere: { url: string; drop(): Promise<void> };
  let otherDb: pg.Client;
  let sameDb: pg.Client;

  beforeAll(async () => {
    t = await runnerApp(4);
    elsewhere = await createLiveDatabase();
    otherDb = new pg.Client({ connectionString: elsewhere.url });
    await otherDb.connect();
    sameDb = new pg.Client({ connectionString: t.database.url });
    await sameDb.connect();
  }, 120_000);

  afterAll(async () => {
    await otherDb?.end();
    await sameDb?.end();
    await elsewhere?.drop();
    await t?.close();
  });

  /** Opens a transaction on `c` that holds a transaction id (a writer's), until COMMIT. */
  async function holdXid(c: pg.Client): Promise<string> {
    await c.query('BEGIN');
    const { rows } = await c.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x');
    return rows[0]!.x;
  }

  async function subscribedRun(label: string) {
    const { services } = t.core;
    const admin = await services.auth.authenticate(ADMIN_KEY);
    const sub = await services.subscriptions.create(admin, {
      name: `horizon ${label}`,
      selector: { kind: 'run.queued', filter: { kind: 'analysis' } },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'echo', caused: label } } },
    });
    // Everything before this run's fact is consumed: the steps below see only what they make.
    while ((await consumeOnce(t.core.internals.deps)) > 0) {
      /* drain */
    }
    return { admin, sub };
  }

  const firings = (subscriptionId: string) =>
    t.core.internals.deps.db
      .selectFrom('subscription_firings')
      .select('outcome')
      .where('subscription_id', '=', subscriptionId)
      .execute();

  it('a writer held open in another database: the fact is consumed and fires now', async () => {
    const { admin, sub } = await subscribedRun('elsewhere');
    const held = await holdXid(otherDb);
    try {
      const { run } = await t.core.services.runs.create(admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', step: 'elsewhere' } },
      });
      // The other database's transaction is older than the fact's and still running.
      const fact = await t.core.internals.deps.db
        .selectFrom('events')
        .select('tx')
        .where('run_id', '=', run.id)
        .executeTakeFirstOrThrow();
      expect(BigInt(held)).toBeLessThan(BigInt(fact.tx));
      // Before: below the server's oldest running transaction, nothing was settled (0, no firing, no fact read).
      expect(await consumeOnce(t.core.internals.deps)).toBeGreaterThan(0);
      expect(await firings(sub.id)).toEqual([{ outcome: 'created' }]);
      const settled = await readSettled(t.core.internals.deps.db, { tx: '0', id: '0' }, 10_000);
      expect(settled.some((s) => s.event.runId === run.id)).toBe(true);
    } finally {
      await otherDb.query('ROLLBACK');
      await t.core.services.subscriptions.delete(admin, sub.id); // its caused runs fire nothing in the next test
    }
  });

  it('a writer held open in this database still holds it back until it ends', async () => {
    const { admin, sub } = await subscribedRun('here');
    await holdXid(sameDb);
    let committed = false;
    try {
      await t.core.services.runs.create(admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', step: 'here' } },
      });
      // The open transaction could still commit a fact below this one: nothing is settled past it.
      expect(await consumeOnce(t.core.internals.deps)).toBe(0);
      expect(await firings(sub.id)).toEqual([]);
      await sameDb.query('COMMIT');
      committed = true;
      expect(await consumeOnce(t.core.internals.deps)).toBeGreaterThan(0);
      expect(await firings(sub.id)).toEqual([{ outcome: 'created' }]);
    } finally {
      if (!committed) await sameDb.query('ROLLBACK');
      await t.core.services.subscriptions.delete(admin, sub.id);
    }
  });
});
