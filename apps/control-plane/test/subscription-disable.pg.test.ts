// A subscription disabled, deleted or re-enabled while the consumer is inside a batch that listed it: the
// firing re-reads it on its locked row (scheduler/subscriptions-consumer.ts `fire`), so it does not fire for the
// rest of that batch. A third connection commits the change while the consumer waits for the subscription's row
// (a lock wait watched in pg_stat_activity, never a sleep). Live PostgreSQL only (PGlite runs one transaction at
// a time: a change there never lands inside a consuming batch).
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../src/http/testing/harness.js';
import { consumeOnce } from '../src/scheduler/subscriptions-consumer.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/subscription-disable.pg.test.ts');

describe.runIf(LIVE_PG)('a subscription changed while a consuming batch holds it', () => {
  let t: RunnerApp;
  let race: LockRace;
  let locker: pg.Client;

  beforeAll(async () => {
    race = await lockRace();
    ({ t, locker } = race);
  }, 120_000);

  afterAll(() => race?.close());

  /** Resolves once a backend of this database waits on a lock. */
  const waiting = () => race.waiting(1);

  const changes: [string, string][] = [
    ['disabled', 'UPDATE subscriptions SET enabled = false WHERE id = $1'],
    ['deleted', 'UPDATE subscriptions SET enabled = false, deleted_at = now() WHERE id = $1'],
    // Disabled and enabled again after the event: it answers events from its re-enabling on.
    ['re-enabled', `UPDATE subscriptions SET enabled_at = now() + interval '1 hour' WHERE id = $1`],
  ];

  for (const [change, statement] of changes) {
    it(`a subscription ${change} mid-batch does not fire for the rest of the batch`, async () => {
      const { services, internals } = t.core;
      const admin = await services.auth.authenticate(ADMIN_KEY);
      const sub = await services.subscriptions.create(admin, {
        name: `to be ${change}`,
        selector: { kind: 'run.queued', filter: { kind: 'analysis' } },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
      });
      const { run } = await services.runs.create(admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', change } },
      });
      // The change, uncommitted, holds the subscription's row: the batch lists the subscription as it was,
      // matches the run's event, and waits at the firing's lock of the row.
      await locker.query('BEGIN');
      try {
        await locker.query(statement, [sub.id]);
        const consuming = consumeOnce(internals.deps);
        await waiting();
        await locker.query('COMMIT');
        expect(await consuming).toBeGreaterThan(0);
      } finally {
        await locker.query('ROLLBACK').catch(() => {});
      }
      while ((await consumeOnce(internals.deps)) > 0) {
        /* drain */
      }
      // Fixed: no firing, no run. Before the fix it fired (`created`) on the batch's reading.
      const firings = await internals.deps.db
        .selectFrom('subscription_firings')
        .select('outcome')
        .where('subscription_id', '=', sub.id)
        .execute();
      expect(firings).toEqual([]);
      expect((await services.runs.list(admin, { causedBy: run.id })).items).toEqual([]);
    }, 60_000);
  }
});
