// The lease bound holds across concurrent grants to one runner (runners/leases.ts, `grantLeases`): two lease
// requests that each read the runner's held leases before either commits would each grant up to the bound. A
// table lock on run_leases, taken by a third connection, holds the first grant inside its claim while the
// second arrives; released, both finish. Live PostgreSQL only (PGlite has one connection: nothing concurrent).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { type Core, startCore } from '../src/core.js';
import { ADMIN_KEY, call, INTERNAL_TOKEN } from '../src/http/testing/harness.js';
import { COMMAND_CAPS, leaseRuns, pairTestRunner } from '../src/http/testing/runners.js';
import { openTrajectoryStore } from '../src/trajectory/store.js';
import { announceSkippedLiveSuite, LIVE_PG, type TestDatabase, testDatabase } from './db.js';

announceSkippedLiveSuite('test/grant-bound.pg.test.ts');

describe.runIf(LIVE_PG)('the lease bound under concurrent grants', () => {
  let database: TestDatabase;
  let core: Core;
  let app: ReturnType<typeof buildApp>['app'];
  let dataDir: string;

  beforeAll(async () => {
    database = await testDatabase({ poolSize: 4 });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cp-grant-bound-'));
    core = await startCore({
      database,
      trajectories: openTrajectoryStore({ dataDir }),
      bootstrapKey: ADMIN_KEY,
      executors: [],
      scheduler: { enabled: false },
    });
    app = buildApp({
      services: core.services,
      health: () => core.health(),
      internalToken: INTERNAL_TOKEN,
      trajectories: core.trajectoryService,
    }).app;
  }, 120_000);

  afterAll(async () => {
    await core?.close();
    await database?.dispose();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('two lease requests in flight at once grant no more than leaseBound(slots) together', async () => {
    // One slot: a bound of two leases.
    const runner = await pairTestRunner(app, { capabilities: { ...COMMAND_CAPS, slots: 1 } });
    for (let i = 0; i < 6; i++) {
      const r = await call(app, 'POST', '/runs', {
        key: ADMIN_KEY,
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    const watch = new pg.Client({ connectionString: database.url });
    await watch.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE run_leases IN SHARE ROW EXCLUSIVE MODE');
      const a = leaseRuns(app, runner, 2);
      const b = leaseRuns(app, runner, 2);
      // Both requests are inside their grant, waiting on a lock (the table's, or the first grant's).
      for (;;) {
        const { rows } = await watch.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        if (rows[0]!.n >= 2) break;
        await new Promise((r) => setImmediate(r));
      }
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
