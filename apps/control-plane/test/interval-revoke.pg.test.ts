// A runner's events and artifacts racing its revoke, in flight at once on two connections. The revoke's lease
// mark is final: a report that read its lease before the revoke committed is stored before the revoke commits,
// or refused 409 `stale_lease` once it has — never stored after it. Events serialize with the revoke on the
// lease row (the batch locks it FOR UPDATE, the revoke's expiry UPDATEs it); an artifact's listing on the
// runner's row (FOR KEY SHARE, as a completion: runners/intervals.ts). A third connection holds a row one side
// needs next, so each pause is a lock wait (watched in pg_stat_activity), never a sleep. Live PostgreSQL only
// (PGlite has one connection).
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../src/http/testing/harness.js';
import { leaseRuns, pairTestRunner, type TestLease, type TestRunner } from '../src/http/testing/runners.js';
import { revokeRunner } from '../src/runners/admin.js';
import { expireHolder } from '../src/runners/leases.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/interval-revoke.pg.test.ts');

describe.runIf(LIVE_PG)('a runner’s events and artifacts racing its revoke', () => {
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

  /** A runner holding the lease of one new command run. */
  async function leased(): Promise<{ runner: TestRunner; lease: TestLease }> {
    const runner = await pairTestRunner(t.app, { name: 'racing' });
    runs += 1;
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true', String(runs)] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const [lease] = await leaseRuns(t.app, runner, 1);
    if (!lease) throw new Error('no lease granted');
    return { runner, lease };
  }

  const revoke = async (runnerId: string) =>
    revokeRunner(
      t.core.internals.deps,
      await t.core.services.auth.authenticate(ADMIN_KEY),
      runnerId,
      expireHolder,
    );

  /** `PUT …/artifacts` as the runner: its status and the refusal's code, if any. */
  async function putArtifact(runner: TestRunner, lease: TestLease, path: string) {
    const res = await t.app.request(
      `/runner/v1/runs/${lease.runId}/artifacts?epoch=${lease.epoch}&path=${encodeURIComponent(path)}`,
      {
        method: 'PUT',
        headers: { authorization: `Bearer ${runner.credential}`, 'content-type': 'application/octet-stream' },
        body: 'artifact bytes',
      },
    );
    const body = (await res.json()) as { code?: string };
    return { status: res.status, code: body.code };
  }

  const postEvents = (runner: TestRunner, lease: TestLease) =>
    call(t.app, 'POST', `/runner/v1/runs/${lease.runId}/events`, {
      key: runner.credential,
      body: {
        epoch: lease.epoch,
        events: [
          {
            type: 'log',
            seq: lease.seqFrom,
            ts: '2026-12-04T01:00:00.000Z',
            runId: lease.runId,
            level: 'info',
            message: 'racing',
            stream: 'stdout',
          },
        ],
      },
    });

  const artifactsOf = async (runId: string) =>
    (
      await t.core.internals.deps.db
        .selectFrom('runner_artifacts')
        .select('path')
        .where('run_id', '=', runId)
        .execute()
    ).map((r) => r.path);

  const eventsOf = async (runId: string) =>
    (await t.core.trajectories!.store.read('default', runId, { offset: 0, limit: 10 })).eventCount;

  it('an artifact arriving while the revoke is in flight is refused once it commits, and not listed', async () => {
    const { runner, lease } = await leased();
    // The lease row held: the revoke waits there, after it locked and revoked the runner's row.
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT 1 FROM run_leases WHERE run_id = $1 FOR SHARE', [lease.runId]);
      const revoking = revoke(runner.id);
      await waiting(1);
      let put = false;
      const putting = putArtifact(runner, lease, 'late.txt').finally(() => {
        put = true;
      });
      // Fixed: its listing waits for the revoke (the runner's row). Before the fix it read the lease as it
      // was and listed the artifact here.
      await waiting(2, () => put);
      await locker.query('COMMIT');
      const [{ expired }, outcome] = await Promise.all([revoking, putting]);
      expect(expired).toEqual([lease.runId]);
      expect(outcome).toEqual({ status: 409, code: 'stale_lease' });
      expect(await artifactsOf(lease.runId)).toEqual([]);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);

  it('an artifact past its lease check when the revoke comes is listed before the revoke commits', async () => {
    const { runner, lease } = await leased();
    // The artifact's listing, inserted uncommitted: the upload waits at its own insert — after its lease check.
    await locker.query('BEGIN');
    try {
      await locker.query(
        `INSERT INTO runner_artifacts (run_id, epoch, path, address, size) VALUES ($1, $2, 'early.txt', 'x', 0)`,
        [lease.runId, lease.epoch],
      );
      const order: string[] = [];
      const putting = putArtifact(runner, lease, 'early.txt').finally(() => order.push('artifact'));
      await waiting(1);
      const revoking = revoke(runner.id).finally(() => order.push('revoke'));
      // Fixed: the revoke waits for the listing (the runner's row). Before the fix it committed here.
      await waiting(2, () => order.includes('revoke'));
      // Neither has answered: without the runner's row held by the listing the revoke would have committed.
      expect(order).toEqual([]);
      await locker.query('ROLLBACK');
      const [outcome, { expired }] = await Promise.all([putting, revoking]);
      // The listing committed first (the revoke waited for it, above): the upload is stored and listed. Which
      // answer comes first is not the point — the upload moves its bytes to their address after its listing
      // commits, and the revoke, no longer waiting, may answer meanwhile.
      expect(outcome.status).toBe(201);
      expect(expired).toEqual([lease.runId]);
      expect(await artifactsOf(lease.runId)).toEqual(['early.txt']);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);

  it('events arriving while the revoke is in flight are refused once it commits, and not stored', async () => {
    const { runner, lease } = await leased();
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT 1 FROM run_leases WHERE run_id = $1 FOR SHARE', [lease.runId]);
      const revoking = revoke(runner.id);
      await waiting(1);
      let posted = false;
      const posting = postEvents(runner, lease).finally(() => {
        posted = true;
      });
      // The batch waits for the lease row behind the revoke.
      await waiting(2, () => posted);
      await locker.query('COMMIT');
      const [{ expired }, res] = await Promise.all([revoking, posting]);
      expect(expired).toEqual([lease.runId]);
      expect([res.status, res.body.code]).toEqual([409, 'stale_lease']);
      expect(await eventsOf(lease.runId)).toBe(0);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);

  it('events past their lease check when the revoke comes are stored before the revoke commits', async () => {
    const { runner, lease } = await leased();
    // The epoch's journal row held: the batch waits at its upsert — after it locked and checked the lease.
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT 1 FROM runner_journals WHERE run_id = $1 AND epoch = $2 FOR SHARE', [
        lease.runId,
        lease.epoch,
      ]);
      const order: string[] = [];
      const posting = postEvents(runner, lease).finally(() => order.push('events'));
      await waiting(1);
      const revoking = revoke(runner.id).finally(() => order.push('revoke'));
      // The revoke's expiry of the lease waits for the batch (the lease row).
      await waiting(2, () => order.includes('revoke'));
      await locker.query('COMMIT');
      const [res, { expired }] = await Promise.all([posting, revoking]);
      expect(order).toEqual(['events', 'revoke']);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(expired).toEqual([lease.runId]);
      expect(await eventsOf(lease.runId)).toBe(1);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);
});
