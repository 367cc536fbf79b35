// The runner path's statements are named prepared statements (db/prepared.ts): a completion batch (the runs
// locked with the audit chain's lock after them, then read with the chain's last link, the attested write with
// the slots' settle, and its tail: the events, the audit links and the leases released in one statement) and
// the lease grant after it are parsed and planned once per pooled connection,
// not once per batch — unnamed, the attested write alone planned for longer than it ran. Live PostgreSQL only
// (PGlite has no pool); a pool of ONE connection, so `pg_prepared_statements` (per session) shows them all.
import { encodeAttestationBody, type Hex } from '@everdict/runrecord';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../src/http/testing/harness.js';
import { leaseRuns, pairTestRunner, signTestInterval } from '../src/http/testing/runners.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type RunnerApp, runnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/runner-prepared.pg.test.ts');

describe.runIf(LIVE_PG)('the runner path on prepared statements', () => {
  let t: RunnerApp;

  beforeAll(async () => {
    t = await runnerApp(1);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('settles a completion batch and grants its next leases through named statements', async () => {
    const runner = await pairTestRunner(t.app);
    for (let i = 0; i < 3; i++) {
      const r = await call(t.app, 'POST', '/runs', {
        key: ADMIN_KEY,
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const leases = await leaseRuns(t.app, runner, 2);
    expect(leases).toHaveLength(2);
    let prev: Hex | undefined;
    const items = leases.map((l) => {
      const signed = signTestInterval(l, runner.key.secretKey, prev ? { auditPrev: prev } : {});
      prev = signed.address;
      return { runId: l.runId, epoch: l.epoch, outputs: {}, attestation: encodeAttestationBody(signed.body) };
    });
    const done = await call(t.app, 'POST', '/runner/v1/completions', {
      key: runner.credential,
      body: { items, next: { free: 1 } },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const results = done.body.results as { outcome: string }[];
    expect(results.map((r) => r.outcome)).toEqual(['settled', 'settled']);
    expect(done.body.leases as unknown[]).toHaveLength(1);

    // The pool's one connection ran all of it: its named statements are the runner path's.
    const { rows } = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements`.execute(
      t.core.internals.deps.db,
    );
    const names = new Set(rows.map((r) => r.name.replace(/_[0-9a-z]+$/, '')));
    for (const n of [
      'grant_runner',
      'open_journals',
      'completion_lock',
      'completion_reads',
      'attested_write',
      'completion_finish',
    ])
      expect(names, n).toContain(n);
    // A batch takes the chain's lock and reads its last link inside its own two reads: no statements of theirs.
    for (const n of ['audit_lock', 'audit_last']) expect(names, n).not.toContain(n);
  }, 120_000);
});
