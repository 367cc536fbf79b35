// The lease bound holds across concurrent grants to one runner (runners/leases.ts, `grantLeases`): two lease
// requests that each read the runner's held leases before either commits would each grant up to the bound. A
// third connection holds the tenant's admission row, so the first grant waits inside its claim (its candidate
// runs locked) while the second arrives; released, both finish: 2 + 2 leases for a bound of 2 before the fix,
// 2 + 0 after. Live PostgreSQL only (PGlite has one connection: nothing concurrent).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../src/http/testing/harness.js';
import { COMMAND_CAPS, leaseRuns, pairTestRunner } from '../src/http/testing/runners.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { lockWaits } from './lock-waits.js';
import { type RunnerApp, runnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/grant-bound.pg.test.ts');

describe.runIf(LIVE_PG)('the lease bound under concurrent grants', () => {
  let t: RunnerApp;

  beforeAll(async () => {
    t = await runnerApp(4);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('two lease requests in flight at once grant no more than leaseBound(slots) together', async () => {
    // One slot: a bound of two leases.
    const runner = await pairTestRunner(t.app, { capabilities: { ...COMMAND_CAPS, slots: 1 } });
    for (let i = 0; i < 20; i++) {
      const r = await call(t.app, 'POST', '/runs', {
        key: ADMIN_KEY,
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const locker = new pg.Client({ connectionString: t.database.url });
    await locker.connect();
    const watch = new pg.Client({ connectionString: t.database.url });
    await watch.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM adm_tenants WHERE tenant = 'default' FOR UPDATE");
      // Requests waiting on a lock (the tenant's row, or the first grant's lock on the runner's).
      const waiting = (n: number) => lockWaits(watch, n);
      // The first grant holds its candidate runs (locked, SKIP LOCKED for others) and waits for the tenant's
      // row; the second arrives then: before the fix it counted the same held leases and took other runs.
      const a = leaseRuns(t.app, runner, 2);
      await waiting(1);
      const b = leaseRuns(t.app, runner, 2);
      await waiting(2);
      await locker.query('COMMIT');
      const granted = [...(await a), ...(await b)];
      expect(granted.length).toBe(2);
      const { rows } = await watch.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM run_leases WHERE holder = $1',
        [runner.id],
      );
      expect(rows[0]!.n).toBe(2);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await watch.end();
    }
  }, 60_000);
});
