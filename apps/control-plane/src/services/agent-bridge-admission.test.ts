// The agent bridge and admission, on the real core (migrated PGlite): a report cannot start a run past the
// tenant's concurrency quota or ahead of the claim — a queued agent run starts only through its lease claim
// (claimAndStart, WFQ order, maxConcurrent), and `started` without a runId opens a running run only while
// the tenant has room. A refused report changes nothing: the run, its queue entry and the tenant's counters
// stay as they were.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { ControlPlaneError } from '../errors.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 1 } });
}, 120_000);
afterAll(async () => {
  await t?.close();
});

const report = (input: Parameters<TestCore['core']['services']['agentBridge']['report']>[1]) =>
  t.core.services.agentBridge.report(t.admin, input);

/** The tenant's admission counters and queue entries, as the claim reads them. */
async function admission() {
  const db = t.core.internals.deps.db;
  const tenant = await db
    .selectFrom('adm_tenants_now')
    .select(['running', 'queued'])
    .where('tenant', '=', t.admin.tenantId)
    .executeTakeFirstOrThrow();
  const queue = await db
    .selectFrom('adm_queue')
    .select('run_id')
    .where('tenant', '=', t.admin.tenantId)
    .orderBy('run_id')
    .execute();
  const slots = await sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM adm_slots
    WHERE tenant = ${t.admin.tenantId} GROUP BY status ORDER BY status`.execute(db);
  return {
    running: Number(tenant.running),
    queued: Number(tenant.queued),
    queue: queue.map((q) => q.run_id),
    slots: slots.rows,
  };
}

async function refusal(p: Promise<unknown>): Promise<ControlPlaneError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ControlPlaneError);
  return e as ControlPlaneError;
}

describe('agent bridge: a report never starts a run outside the claim or past maxConcurrent', () => {
  it('a queued agent run is not started by a `started` report (409, nothing changed): it waits for its claim', async () => {
    // The tenant's one concurrent run, running.
    const first = await report({ event: 'started', agent: { agentId: 'helper' } });
    expect(first.status).toBe('running');
    // A queued agent run (a turn waiting for its lease).
    const { run: queued } = await t.core.services.runs.create(t.admin, {
      kind: 'agent',
      subject: { agentId: 'helper', agentVersion: '0', permissionMode: 'ask' },
      placement: { where: 'runtime', target: 'agent-service' },
    });
    expect(queued.status).toBe('queued');
    const before = await admission();
    expect(before).toMatchObject({ running: 1, queued: 1, queue: [queued.id] });

    // Before the fix: running, the tenant at 2 running with maxConcurrent 1, its queue entry gone unclaimed.
    const e = await refusal(report({ runId: queued.id, event: 'started' }));
    expect(e.code).toBe('conflict');
    expect(e.httpStatus).toBe(409);
    expect(e.details).toMatchObject({ reason: 'not_claimed' });
    expect((await t.core.services.runs.get(t.admin, queued.id)).status).toBe('queued');
    expect(await admission()).toEqual(before);

    // It still waits for its claim once the running one settles: counted queued, its entry in place.
    await report({ runId: first.id, event: 'succeeded' });
    expect(await admission()).toMatchObject({ running: 0, queued: 1, queue: [queued.id] });
    await t.core.services.runs.cancel(t.admin, queued.id);
    expect(await admission()).toMatchObject({ running: 0, queued: 0, queue: [] });
  });

  it('`started` without a runId at the quota is 429 (rule concurrency) and creates nothing', async () => {
    const first = await report({ event: 'started', agent: { agentId: 'helper' } });
    expect(first.status).toBe('running');
    const before = await admission();
    expect(before).toMatchObject({ running: 1, queued: 0, queue: [] });
    const listed = (await t.core.services.runs.list(t.admin, { kind: 'agent' })).items.length;

    // Before the fix: a second running run, the tenant at 2 running with maxConcurrent 1.
    const e = await refusal(report({ event: 'started', agent: { agentId: 'helper' } }));
    expect(e.code).toBe('capacity_exceeded');
    expect(e.httpStatus).toBe(429);
    expect(e.details).toMatchObject({ rule: 'concurrency', maxConcurrent: 1, running: 1 });
    expect(await admission()).toEqual(before);
    expect((await t.core.services.runs.list(t.admin, { kind: 'agent' })).items.length).toBe(listed);

    // Room again once it settles.
    await report({ runId: first.id, event: 'succeeded' });
    const next = await report({ event: 'started', agent: { agentId: 'helper' } });
    expect(next.status).toBe('running');
    expect(await admission()).toMatchObject({ running: 1, queued: 0, queue: [] });
    await report({ runId: next.id, event: 'succeeded' });
  });
});
