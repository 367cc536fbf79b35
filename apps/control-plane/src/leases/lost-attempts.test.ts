// The attempts rule counts LOST executions, never starts, on the real core (a migrated PGlite) through the real
// app, with the core's clock moved by the test (a lease expires in clock time): an agent turn that parks and
// resumes more times than maxAttempts (every resume is a new lease: a new epoch) is requeued on its first lost
// lease, not failed; it fails `executor_lost` on its maxAttempts-th lost lease. Epochs stay strictly
// monotonic throughout and a superseded one is 409 `stale_lease`. A parked turn leased for its resume whose
// lease expires before its `resumed` report (its host died at resume) is a lost execution too: counted, the
// turn still parked and leasable; its maxAttempts-th such loss fails it `executor_lost`; a heartbeat wins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseOneTurn, startAgentTurn } from '../http/testing/agent-turns.js';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';
import { leasePolicy, scanExpiredLeases, settleExpired, sweepExpiredLeases } from './index.js';

let t: TestApp;
let clockMs = Date.now();
beforeAll(async () => {
  t = await testApp({ clock: () => new Date(clockMs) });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const MAX_ATTEMPTS = 3;
const policy = leasePolicy({ maxAttempts: MAX_ATTEMPTS });
const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);
const MANIFEST = 'c'.repeat(64);
const transcript = (n: number) => n.toString(16).padStart(64, '0');

const leaseOne = (holder: string) => leaseOneTurn(t.app, holder);

const runOf = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body;

/** Move the clock past every lease granted so far, then sweep (any background sweep may act first: read the run). */
async function loseLease(runId: string) {
  clockMs += policy.leaseMs + 1_000;
  await sweepExpiredLeases(t.core.internals.deps, policy, clockMs);
  return runOf(runId);
}

const startTurn = (name: string) => startAgentTurn(t.app, name);

describe('the attempts rule counts lost executions, not starts', { timeout: 180_000 }, () => {
  it('a turn parked and resumed more than maxAttempts times is requeued on a lost lease; maxAttempts losses fail it', async () => {
    const runId = await startTurn('parker');

    // Park and resume PARKS (> maxAttempts) times: every resume is leased anew (epoch + 1).
    const PARKS = MAX_ATTEMPTS + 2;
    const epochs: number[] = [];
    let held = { holder: 'host-a', epoch: 0 };
    for (let i = 1; i <= PARKS + 1; i++) {
      const lease = await leaseOne('host-a');
      expect(lease.runId).toBe(runId);
      epochs.push(lease.epoch);
      held = { holder: 'host-a', epoch: lease.epoch };
      if (i > 1) {
        const resumed = await internal('POST', '/internal/agent-run-events', {
          runId,
          event: 'resumed',
          ...held,
          transcript: transcript(i - 1),
          manifest: MANIFEST,
        });
        expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
        expect(resumed.body.status).toBe('running');
      }
      if (i > PARKS) break;
      const asked = await internal('POST', `/internal/agent/v1/runs/${runId}/calls`, {
        ...held,
        callId: `call_${i}`,
        tool: 'ask_approval',
        input: { question: `step ${i}?` },
      });
      expect(asked.status, JSON.stringify(asked.body)).toBe(201);
      const parked = await internal('POST', '/internal/agent-run-events', {
        runId,
        event: 'awaiting_input',
        ...held,
        transcript: transcript(i),
        transcriptBytes: 100,
        manifest: MANIFEST,
        account: { dispatched: [`call_${i}`], resolved: i > 1 ? [`call_${i - 1}`] : [] },
      });
      expect(parked.status, JSON.stringify(parked.body)).toBe(200);
      const answered = await call(t.app, 'POST', `/runs/${runId}/input`, {
        body: { callId: `call_${i}`, approved: true },
      });
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    }
    expect(epochs).toEqual(Array.from({ length: PARKS + 1 }, (_, k) => k + 1));
    expect(await runOf(runId)).toMatchObject({ status: 'running', attempt: PARKS + 1 });

    // Its first lost lease (the run's attempt is far past maxAttempts): requeued, not failed.
    expect(await loseLease(runId)).toMatchObject({ status: 'queued', attempt: PARKS + 1 });
    const stale = await internal('POST', `/internal/agent/v1/runs/${runId}/transcript`, {
      ...held,
      events: [],
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('stale_lease');

    // Lost again (2 of 3): requeued; each new start is a higher epoch.
    const second = await leaseOne('host-b');
    expect(second).toMatchObject({ runId, epoch: PARKS + 2 });
    expect(await loseLease(runId)).toMatchObject({ status: 'queued', attempt: PARKS + 2 });

    // The maxAttempts-th lost lease fails it executor_lost.
    const third = await leaseOne('host-c');
    expect(third).toMatchObject({ runId, epoch: PARKS + 3 });
    const failed = await loseLease(runId);
    expect(failed).toMatchObject({ status: 'failed', attempt: PARKS + 3, error: { code: 'executor_lost' } });
    expect((failed.error as { message: string }).message).toContain(`lost attempt 3 of ${MAX_ATTEMPTS}`);
    const requeued = await t.core.internals.deps.db
      .selectFrom('events')
      .select('kind')
      .where('run_id', '=', runId)
      .where('kind', '=', 'run.requeued')
      .execute();
    expect(requeued).toHaveLength(MAX_ATTEMPTS - 1);
  });
});

const lostOf = async (runId: string) =>
  t.core.internals.deps.db
    .selectFrom('runs')
    .select(['status', 'attempt', 'lost_attempts'])
    .where('id', '=', runId)
    .executeTakeFirstOrThrow();

describe('a parked turn whose resume lease expires lost an execution', { timeout: 180_000 }, () => {
  it('each expiry before `resumed` counts (still parked, leasable); the maxAttempts-th fails it; a heartbeat wins', async () => {
    const deps = t.core.internals.deps;
    const runId = await startTurn('crasher');

    // Started (epoch 1), parks on a question, answered: ready to be leased for its resume.
    const first = await leaseOne('host-a');
    expect(first).toMatchObject({ runId, epoch: 1 });
    const held = { holder: 'host-a', epoch: 1 };
    const asked = await internal('POST', `/internal/agent/v1/runs/${runId}/calls`, {
      ...held,
      callId: 'call_1',
      tool: 'ask_approval',
      input: { question: 'go on?' },
    });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    const parked = await internal('POST', '/internal/agent-run-events', {
      runId,
      event: 'awaiting_input',
      ...held,
      transcript: transcript(1),
      transcriptBytes: 100,
      manifest: MANIFEST,
      account: { dispatched: ['call_1'], resolved: [] },
    });
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    const answered = await call(t.app, 'POST', `/runs/${runId}/input`, {
      body: { callId: 'call_1', approved: true },
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    // Leased for its resume (epoch 2); the host dies before `resumed`: one lost execution, still parked.
    expect(await leaseOne('host-a')).toMatchObject({ runId, epoch: 2 });
    expect(await loseLease(runId)).toMatchObject({ status: 'awaiting_input', attempt: 2 });
    expect(await lostOf(runId)).toMatchObject({ status: 'awaiting_input', lost_attempts: 1 });

    // Leased again (epoch 3): a sweep that scanned it expired, then a heartbeat renewed it, counts nothing.
    expect(await leaseOne('host-b')).toMatchObject({ runId, epoch: 3 });
    const grantedAt = clockMs;
    const later = grantedAt + policy.leaseMs + 1;
    const scanned = (await scanExpiredLeases(deps, later)).filter((r) => r.run_id === runId);
    expect(scanned).toMatchObject([{ status: 'awaiting_input', attempt: 3 }]);
    clockMs = grantedAt + Math.floor(policy.leaseMs / 2);
    const beat = await internal('POST', '/internal/agent/v1/heartbeat', {
      holder: 'host-b',
      leases: [{ runId, epoch: 3 }],
    });
    expect(beat.status, JSON.stringify(beat.body)).toBe(200);
    expect(beat.body.lost).toEqual([]);
    expect(await settleExpired(deps, policy, scanned, later)).toMatchObject({ failed: [] });
    expect(await lostOf(runId)).toMatchObject({ status: 'awaiting_input', attempt: 3, lost_attempts: 1 });
    const lease = await deps.db
      .selectFrom('run_leases')
      .select(['epoch'])
      .where('run_id', '=', runId)
      .execute();
    expect(lease.map((l) => Number(l.epoch))).toEqual([3]);

    // Its renewed lease runs out too: lost (2 of 3), still parked and leasable.
    expect(await loseLease(runId)).toMatchObject({ status: 'awaiting_input', attempt: 3 });
    expect(await lostOf(runId)).toMatchObject({ status: 'awaiting_input', lost_attempts: 2 });

    // The maxAttempts-th lost resume fails the turn executor_lost; it is never leased again.
    expect(await leaseOne('host-c')).toMatchObject({ runId, epoch: 4 });
    const failed = await loseLease(runId);
    expect(failed).toMatchObject({ status: 'failed', attempt: 4, error: { code: 'executor_lost' } });
    expect((failed.error as { message: string }).message).toContain(`lost attempt 3 of ${MAX_ATTEMPTS}`);
    expect(await lostOf(runId)).toMatchObject({ status: 'failed', lost_attempts: 3 });
    expect(
      await deps.db.selectFrom('run_leases').select('run_id').where('run_id', '=', runId).execute(),
    ).toEqual([]);
    const again = await internal('POST', '/internal/agent/v1/leases', { holder: 'host-d', free: 1 });
    expect(again.status).toBe(200);
    expect(again.body.leases).toEqual([]);
  });
});
