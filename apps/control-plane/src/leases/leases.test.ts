// The lease rule on a real (PGlite) core: a start grants a lease at the run's next attempt; an expired one
// is requeued (running → queued, no record segment) until its maxAttempts-th loss, then failed executor_lost
// (starts and re-grants do not count: only lost executions do; no exit code, no executed interval: the record
// closes abandoned); a superseded attempt's result is refused and
// changes nothing; a heartbeat reports leases lost; a heartbeat that lands between the sweep's scan and its
// lock wins (the run is neither requeued nor failed).
import { transition } from '@everdict/run-model';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { isControlPlaneError } from '../errors.js';
import { rowToRun, selectRunRows } from '../ledger/runs.js';
import type { Finished } from '../scheduler/batch-transitions.js';
import { settleMany } from '../scheduler/batch-transitions.js';
import { claimAndStart } from '../scheduler/claim-start.js';
import { INLINE_KINDS } from '../scheduler/dispatch-loop.js';
import {
  assertCurrentEpoch,
  grant,
  leasePolicy,
  renew,
  scanExpiredLeases,
  settleExpired,
  sweepExpiredLeases,
} from './index.js';

let t: TestCore;
afterEach(async () => t.close());

const LEASE = { holder: 'replica-a', leaseMs: 10_000 };
const echo = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } };

/** The core's clock: tests move it (a lease expires in clock time, not in wall time). */
let clockMs = Date.now();
const at = (ms: number) => {
  clockMs = ms;
  return new Date(ms);
};

async function setup() {
  clockMs = Date.now();
  t = await testCore({ scheduler: { enabled: false }, clock: () => new Date(clockMs) });
  const deps = t.core.internals.deps;
  const id = (await t.core.services.runs.create(t.admin, echo)).run.id;
  return { deps, id };
}

const succeed = (tenant: string, runId: string, epoch: number): Finished => ({
  tenant,
  runId,
  epoch,
  event: { type: 'succeed' },
  extras: { outputs: { summary: `attempt ${epoch}`, exitCode: 0 }, interval: { journal: { epoch } } },
});

describe('leases', { timeout: 120_000 }, () => {
  it('requeues a lost execution without a segment, refuses its stale result, settles the next attempt once', async () => {
    const { deps, id } = await setup();
    const tenant = t.admin.tenantId;
    const segments = async () =>
      (
        await deps.db
          .selectFrom('record_segments')
          .select('kind')
          .where('run_id', '=', id)
          .orderBy('idx')
          .execute()
      ).map((s) => s.kind);
    const before = await segments();
    const t0 = clockMs + 5;
    const [first] = await claimAndStart(deps.db, 1, at(t0), INLINE_KINDS, LEASE);
    expect(first).toMatchObject({ runId: id, epoch: 1 });
    const lease = await deps.db
      .selectFrom('run_leases')
      .selectAll()
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow();
    expect({
      holder: lease.holder,
      epoch: Number(lease.epoch),
      expires: Number(lease.expires_at_ms),
    }).toEqual({
      holder: 'replica-a',
      epoch: 1,
      expires: t0 + 10_000,
    });

    // Not expired yet: nothing moves.
    const policy = leasePolicy({ maxAttempts: 3 });
    expect(await sweepExpiredLeases(deps, policy, t0 + 10_000)).toEqual({
      requeued: [],
      failed: [],
      dropped: 0,
      parked: [],
    });
    const runningRow = await selectRunRows(deps.db)
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    // Expired: requeued (run-model's requeue), counters back, no segment, the fact as run-model states it.
    const swept = await sweepExpiredLeases(deps, policy, at(t0 + 10_001).getTime());
    expect(swept).toEqual({ requeued: [id], failed: [], dropped: 0, parked: [] });
    const run = await t.core.services.runs.get(t.admin, id);
    expect(run).toMatchObject({ status: 'queued', attempt: 1 });
    expect(run.startedAt).toBeUndefined();
    expect(await segments()).toEqual(before);
    const ten = await deps.db
      .selectFrom('adm_tenants_now')
      .selectAll()
      .where('tenant', '=', tenant)
      .executeTakeFirstOrThrow();
    expect({ running: ten.running, queued: ten.queued }).toEqual({ running: 0, queued: 1 });
    expect(await deps.db.selectFrom('run_leases').select('run_id').execute()).toEqual([]);
    const ev = await deps.db
      .selectFrom('events')
      .select(['kind', 'payload', 'created_at'])
      .where('run_id', '=', id)
      .where('kind', '=', 'run.requeued')
      .execute();
    expect(ev).toHaveLength(1);
    const r = transition(
      rowToRun(runningRow),
      { type: 'requeue', cause: 'executor_lost' },
      ev[0]!.created_at.toISOString(),
    );
    if (!r.ok) throw r.error;
    expect(r.patch.status).toBe('queued');
    const { type, tenant: _t, at: _a, ...data } = r.facts[0] as Record<string, unknown>;
    expect(type).toBe('run.requeued');
    expect(ev[0]!.payload).toEqual(data);

    // The old holder's heartbeat learns it lost the lease.
    expect(await renew(deps.db, 'replica-a', [{ runId: id, epoch: 1 }], t0 + 10_002, 10_000)).toEqual({
      renewed: [],
      lost: [id],
    });

    // Attempt 2 starts; attempt 1's late result is refused and changes nothing.
    const [second] = await claimAndStart(deps.db, 1, at(t0 + 10_010), INLINE_KINDS, {
      ...LEASE,
      holder: 'b',
    });
    expect(second).toMatchObject({ runId: id, epoch: 2 });
    const stale = await assertCurrentEpoch(deps.db, id, 1).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isControlPlaneError(stale) && { code: stale.code, status: stale.httpStatus }).toEqual({
      code: 'stale_lease',
      status: 409,
    });
    const snapshot = await deps.db
      .selectFrom('runs')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(await settleMany(deps.db, deps, [succeed(tenant, id, 1)])).toEqual([]);
    expect(
      await deps.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    ).toEqual(snapshot);
    await assertCurrentEpoch(deps.db, id, 2, 'b');
    expect(await renew(deps.db, 'b', [{ runId: id, epoch: 2 }], t0 + 10_020, 10_000)).toMatchObject({
      lost: [],
    });

    // Attempt 2's result settles once; its lease is released; exactly one executed segment was added.
    at(t0 + 10_030);
    expect(await settleMany(deps.db, deps, [succeed(tenant, id, 2)])).toEqual([id]);
    expect(await settleMany(deps.db, deps, [succeed(tenant, id, 2)])).toEqual([]);
    const done = await t.core.services.runs.get(t.admin, id);
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2, outputs: { summary: 'attempt 2' } });
    expect(await deps.db.selectFrom('run_leases').select('run_id').execute()).toEqual([]);
    const added = (await segments()).slice(before.length);
    expect(added).toHaveLength(2); // the attempt's interval and the close
    expect((await t.core.services.runs.record(t.admin, id)).verify.ok).toBe(true);
  });

  it('fails executor_lost once the attempts are spent', async () => {
    const { deps, id } = await setup();
    const policy = leasePolicy({ maxAttempts: 2 });
    let now = clockMs + 5;
    for (const expected of [
      { requeued: [id], failed: [] },
      { requeued: [], failed: [id] },
    ]) {
      await claimAndStart(deps.db, 1, at(now), INLINE_KINDS, LEASE);
      now += 10_001;
      expect(await sweepExpiredLeases(deps, policy, at(now).getTime())).toEqual({
        ...expected,
        dropped: 0,
        parked: [],
      });
      now += 1;
    }
    const run = await t.core.services.runs.get(t.admin, id);
    expect(run).toMatchObject({ status: 'failed', attempt: 2, error: { code: 'executor_lost' } });
    // Nothing of the lost attempts was observed: no exit code claimed, no executed interval sealed, no
    // attestation stored; the record just closes, abandoned — and verifies.
    expect(run.outputs.exitCode).toBeUndefined();
    expect(run.outputs.summary).toBe('its executor was lost (lease expired): lost attempt 2 of 2');
    const record = await t.core.services.runs.record(t.admin, id);
    expect(record.verify.ok).toBe(true);
    const wire = (record.wire as { segments: { kind: string; reason?: string }[] }).segments;
    expect(wire.map((s) => [s.kind, s.reason])).toEqual([['closed', 'abandoned']]);
    expect(
      await deps.db.selectFrom('attestations').select('address').where('run_id', '=', id).execute(),
    ).toEqual([]);
    const ten = await deps.db
      .selectFrom('adm_tenants_now')
      .selectAll()
      .where('tenant', '=', t.admin.tenantId)
      .executeTakeFirstOrThrow();
    expect({ running: ten.running, queued: ten.queued }).toEqual({ running: 0, queued: 0 });
  });

  it('counts lost executions, not starts: re-granted past maxAttempts, a run is still requeued when lost', async () => {
    const { deps, id } = await setup();
    const tenant = t.admin.tenantId;
    const policy = leasePolicy({ maxAttempts: 2 });
    let now = clockMs + 5;
    await claimAndStart(deps.db, 1, at(now), INLINE_KINDS, LEASE);
    // Four more grants of the running run (as a resume is leased): epochs 2..5, none lost.
    for (const epoch of [2, 3, 4, 5]) {
      const [l] = await grant(deps.db, [{ runId: id, tenant }], 'runner-1', now, 10_000);
      expect(l).toMatchObject({ runId: id, epoch });
    }
    for (const [expected, epoch] of [
      [{ requeued: [id], failed: [] }, 5],
      [{ requeued: [], failed: [id] }, 6],
    ] as const) {
      now += 10_001;
      expect(await sweepExpiredLeases(deps, policy, at(now).getTime())).toEqual({
        ...expected,
        dropped: 0,
        parked: [],
      });
      expect(await t.core.services.runs.get(t.admin, id)).toMatchObject({ attempt: epoch });
      now += 1;
      if (expected.failed.length === 0) {
        const [next] = await claimAndStart(deps.db, 1, at(now), INLINE_KINDS, LEASE);
        expect(next).toMatchObject({ runId: id, epoch: epoch + 1 });
      }
    }
    const run = await t.core.services.runs.get(t.admin, id);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'executor_lost' } });
    expect((await t.core.services.runs.record(t.admin, id)).verify.ok).toBe(true);
  });

  it.each([
    ['fail (attempts spent)', 1],
    ['requeue (attempts left)', 3],
  ] as const)(
    'a heartbeat between the scan and the %s wins: the run is left running',
    async (what, maxAttempts) => {
      const { deps, id } = await setup();
      const policy = leasePolicy({ maxAttempts });
      const t0 = clockMs + 5;
      await claimAndStart(deps.db, 1, at(t0), INLINE_KINDS, LEASE);
      const now = t0 + 10_001;
      at(now);
      // The sweep's scan sees the lease expired...
      const scanned = await scanExpiredLeases(deps, now);
      expect(scanned.map((r) => r.run_id)).toEqual([id]);
      // ...then the holder's (late) heartbeat commits: the lease now runs to now + 10 s...
      const hb = await renew(deps.db, LEASE.holder, [{ runId: id, epoch: 1 }], now, 10_000);
      expect(hb).toEqual({ renewed: [{ runId: id, epoch: 1 }], lost: [] });
      // ...so acting on the stale scan moves nothing: the re-check under the run's lock sees the renewal.
      expect(await settleExpired(deps, policy, scanned, now)).toEqual({
        requeued: [],
        failed: [],
        dropped: 0,
        parked: [],
      });
      expect(await t.core.services.runs.get(t.admin, id)).toMatchObject({ status: 'running', attempt: 1 });
      const lease = await deps.db
        .selectFrom('run_leases')
        .select(['epoch', 'expires_at_ms'])
        .where('run_id', '=', id)
        .executeTakeFirstOrThrow();
      expect([Number(lease.epoch), Number(lease.expires_at_ms)]).toEqual([1, now + 10_000]);
      // Once the renewed lease expires unrenewed, the sweep moves the run as before.
      const expired = await sweepExpiredLeases(deps, policy, at(now + 10_001).getTime());
      expect(expired).toEqual(
        what.startsWith('fail')
          ? { requeued: [], failed: [id], dropped: 0, parked: [] }
          : { requeued: [id], failed: [], dropped: 0, parked: [] },
      );
    },
  );

  it('grants a lease on a run started elsewhere and drops leases of runs no longer running', async () => {
    const { deps, id } = await setup();
    const now = clockMs + 5;
    at(now);
    expect(await grant(deps.db, [{ runId: id, tenant: t.admin.tenantId }], 'runner-1', now, 1_000)).toEqual(
      [],
    );
    await claimAndStart(deps.db, 1, new Date(now), INLINE_KINDS);
    const [l] = await grant(deps.db, [{ runId: id, tenant: t.admin.tenantId }], 'runner-1', now, 1_000);
    expect(l).toMatchObject({ runId: id, holder: 'runner-1', epoch: 2, expiresAtMs: now + 1_000 });
    await t.core.services.runs.cancel(t.admin, id);
    at(now + 1_001);
    expect(await sweepExpiredLeases(deps, leasePolicy(), now + 1_001)).toEqual({
      requeued: [],
      failed: [],
      dropped: 1,
      parked: [],
    });
  });
});
