// An OTLP import racing a runner's lease grant on one run (src/trajectory/run-trajectories.ts,
// `appendOutsideLease`). A third connection holds the tenant's admission row, so the grant waits inside its
// claim with the run's row locked; the import arrives then and waits for that row. Released, the grant commits
// the lease (its journal from seqFrom 0) and the import, seeing it, is materialized as an imported trajectory:
// the runner's events then append at the seqs it numbered. Before the fix the import appended at seq 0 once the
// grant committed and the runner's batch was 409 event_conflict. Live PostgreSQL only (PGlite has one connection).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../src/http/testing/harness.js';
import { COMMAND_CAPS, leaseRuns, pairTestRunner } from '../src/http/testing/runners.js';
import { agentTrace, otlpJson } from '../src/trajectory/otlp-fixtures.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { lockWaits } from './lock-waits.js';
import { type RunnerApp, runnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/otlp-lease-race.pg.test.ts');

describe.runIf(LIVE_PG)('an OTLP import racing a lease grant', () => {
  let t: RunnerApp;

  beforeAll(async () => {
    t = await runnerApp(4);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('an import that waited for the grant does not take the seqs of the lease it granted', async () => {
    const runner = await pairTestRunner(t.app, { capabilities: COMMAND_CAPS });
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as { id: string }).id;
    const traceId = 'a7'.repeat(16);
    const locker = new pg.Client({ connectionString: t.database.url });
    await locker.connect();
    const watch = new pg.Client({ connectionString: t.database.url });
    await watch.connect();
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM adm_tenants WHERE tenant = 'default' FOR UPDATE");
      const waiting = (n: number) => lockWaits(watch, n);
      // The grant holds the run's row (its claim) and waits for the tenant's; the import waits for the run's.
      const granting = leaseRuns(t.app, runner, 1);
      await waiting(1);
      const importing = call(t.app, 'POST', '/v1/traces', {
        key: ADMIN_KEY,
        body: otlpJson(agentTrace(traceId), { 'everdict.run_id': runId }),
      });
      await waiting(2);
      await locker.query('COMMIT');
      const [lease] = await granting;
      expect(lease?.runId).toBe(runId);
      expect(lease?.seqFrom).toBe(0);
      const imported = await importing;
      expect(imported.status, JSON.stringify(imported.body)).toBe(200);

      // The runner's journal takes its seqs; the spans are an imported trajectory of their own.
      const events = [0, 1].map((seq) => ({
        type: 'log',
        seq,
        ts: '2026-12-02T01:00:00.000Z',
        runId,
        level: 'info',
        message: `line ${seq}`,
        stream: 'stdout',
      }));
      const ev = await call(t.app, 'POST', `/runner/v1/runs/${runId}/events`, {
        key: runner.credential,
        body: { epoch: lease!.epoch, events },
      });
      expect(ev.status, JSON.stringify(ev.body)).toBe(202);
      const page = await t.core.trajectories!.store.read('default', runId, { offset: 0, limit: 100 });
      expect(page.items.map((e) => [e.seq, e.type])).toEqual([
        [0, 'log'],
        [1, 'log'],
      ]);
      const listed = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
      expect((listed.body.items as unknown[]).length).toBe(1);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await watch.end();
    }
  }, 60_000);
});
