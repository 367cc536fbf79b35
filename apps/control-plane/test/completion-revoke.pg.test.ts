// A runner's completion and its revoke, in flight at once on two connections (runners/completion-rows.ts: they
// serialize on the runner's row). Either the completion settles first — and the revoke then finds no lease of it
// to end — or the revoke commits first and the completion is 409 `stale_lease`; never a completion that read its
// lease before the revoke committed settling the run after it. A third connection holds a row one side needs
// next, so each pause is a lock wait (watched in pg_stat_activity), never a sleep. Both completion doors: one
// completion (`complete`) and a batch (`completions`). Live PostgreSQL only (PGlite has one connection).
import { encodeAttestationBody } from '@everdict/runrecord';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../src/http/testing/harness.js';
import {
  leaseRuns,
  pairTestRunner,
  signTestInterval,
  type TestLease,
  type TestRunner,
} from '../src/http/testing/runners.js';
import { leasePolicy } from '../src/leases/policy.js';
import { revokeRunner } from '../src/runners/admin.js';
import { expireHolder, requeueExpired } from '../src/runners/leases.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/completion-revoke.pg.test.ts');

type Door = 'complete' | 'completions';

describe.runIf(LIVE_PG)('a completion racing its runner’s revoke', () => {
  let t: RunnerApp;
  let race: LockRace;
  let locker: pg.Client;
  let runs = 0;

  beforeAll(async () => {
    race = await lockRace();
    ({ t, locker } = race);
  }, 120_000);

  afterAll(() => race?.close());

  const waiting = (n: number, done?: () => boolean) => race.waiting(n, done);

  /** A runner holding the lease of one new command run, and its signed completion of it. */
  async function leased(): Promise<{ runner: TestRunner; lease: TestLease; address: string; body: object }> {
    const runner = await pairTestRunner(t.app, { name: 'racing' });
    // A command of its own: an attestation's address is its body's, and equal runs would sign equal bodies.
    runs += 1;
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true', String(runs)] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const [lease] = await leaseRuns(t.app, runner, 1);
    if (!lease) throw new Error('no lease granted');
    const signed = signTestInterval(lease, runner.key.secretKey);
    const body = { epoch: lease.epoch, outputs: {}, attestation: encodeAttestationBody(signed.body) };
    return { runner, lease, address: signed.address, body };
  }

  /** The completion through `door`: `settled`, or the refusal's code. */
  async function complete(door: Door, runner: TestRunner, runId: string, body: object): Promise<string> {
    if (door === 'complete') {
      const r = await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
        key: runner.credential,
        body,
      });
      return r.status === 200 ? 'settled' : String(r.body.code);
    }
    const r = await call(t.app, 'POST', '/runner/v1/completions', {
      key: runner.credential,
      body: { items: [{ runId, ...body }] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [result] = r.body.results as { outcome: string; problem?: { code?: string } }[];
    return result?.outcome === 'settled' ? 'settled' : String(result?.problem?.code ?? result?.outcome);
  }

  const revoke = async (runnerId: string) =>
    revokeRunner(
      t.core.internals.deps,
      await t.core.services.auth.authenticate(ADMIN_KEY),
      runnerId,
      expireHolder,
    );

  const statusOf = async (runId: string) => String((await call(t.app, 'GET', `/runs/${runId}`)).body.status);

  for (const door of ['complete', 'completions'] as const) {
    it(`${door}: a completion past its lease check when the revoke comes settles first; the revoke ends nothing of it`, async () => {
      const { runner, lease, address, body } = await leased();
      // The completion's attestation, inserted uncommitted: the completion waits at its own insert of it —
      // after it read and checked its lease.
      await locker.query('BEGIN');
      try {
        await locker.query(
          `INSERT INTO attestations (address, tenant_id, run_id, body, created_at)
            VALUES ($1, 'default', $2, '{}'::jsonb, now())`,
          [address, lease.runId],
        );
        const completion = complete(door, runner, lease.runId, body);
        await waiting(1);
        let revoked = false;
        const revoking = revoke(runner.id).finally(() => {
          revoked = true;
        });
        // Fixed: the revoke waits for the completion (the runner's row). Before the fix it committed here.
        await waiting(2, () => revoked);
        await locker.query('ROLLBACK');
        const [outcome, { expired }] = await Promise.all([completion, revoking]);
        expect(outcome).toBe('settled');
        expect(expired).toEqual([]);
        expect(await statusOf(lease.runId)).toBe('succeeded');
      } finally {
        await locker.query('ROLLBACK').catch(() => {});
      }
    }, 60_000);

    it(`${door}: a completion arriving while the revoke is in flight is refused once it commits; the run requeues`, async () => {
      const { runner, lease, body } = await leased();
      // The lease row held: the revoke waits there, after it locked and revoked the runner's row.
      await locker.query('BEGIN');
      try {
        await locker.query('SELECT 1 FROM run_leases WHERE run_id = $1 FOR SHARE', [lease.runId]);
        const revoking = revoke(runner.id);
        await waiting(1);
        // Fixed: it waits for the revoke (the runner's row). Before the fix it read the lease as it was, settled,
        // and waited only to drop the lease row.
        const completion = complete(door, runner, lease.runId, body);
        await waiting(2);
        await locker.query('COMMIT');
        const [{ expired }, outcome] = await Promise.all([revoking, completion]);
        expect(expired).toEqual([lease.runId]);
        expect(outcome).toBe('stale_lease');
        expect(await statusOf(lease.runId)).toBe('running');
        expect(await requeueExpired(t.core.internals.deps, leasePolicy(), expired)).toEqual([lease.runId]);
        expect(await statusOf(lease.runId)).toBe('queued');
      } finally {
        await locker.query('ROLLBACK').catch(() => {});
      }
    }, 60_000);
  }
});
