// The combined admission write is all or nothing: a guard that no longer holds when it runs (another replica
// filled the queue, spent the budget, admitted the request id) rolls back every insert it carries.
import { type AdmissionPlan, decide, tenantPolicy } from '@everdict/admission';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';
import { insertEventsSql } from '../../ledger/events.js';
import type { RunRow } from '../../ledger/runs.js';
import { DISPATCH_CHANNEL } from '../../services/context.js';
import { factsToEvents, prepareCreate, rowOf } from '../../services/lifecycle.js';
import { commitBatch } from './commit-batch.js';
import { loadTaskSnapshots } from './load.js';
import { PgAdmissionStore } from './store.js';

let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

const TABLES = ['runs', 'events', 'adm_admissions', 'adm_slots', 'adm_queue', 'adm_wfq'] as const;

async function setup(policy: Parameters<typeof tenantPolicy>[0]) {
  core = await testCore({ scheduler: { enabled: false } });
  const deps = core.core.internals.deps;
  const tenant = core.admin.tenantId;
  await new PgAdmissionStore(deps.db).putTenant(tenant, tenantPolicy(policy));
  const who = { tenant, actor: core.admin.actor };
  // Callers' request ids: their decisions are recorded (an auto one is not — auto-request.test.ts).
  const preps = [0, 1].map((i) =>
    prepareCreate(
      deps,
      who,
      { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] }, requestId: `req-${i}` },
      {},
    ),
  );
  const snaps = await loadTaskSnapshots(deps.db, [
    { tenant, requestIds: preps.map((p) => p.request.requestId) },
  ]);
  const snap = snaps.get(tenant)?.snapshot;
  if (!snap) throw new Error('no snapshot');
  const plans: AdmissionPlan[] = preps.map((p) => {
    const v = decide(snap, p.request, p.now.getTime());
    if (!('plan' in v)) throw new Error('expected a plan');
    return v.plan;
  });
  const built = preps.map((p, i) => p.build(plans[i]!.decision));
  const events = factsToEvents(built.flatMap((b) => b.facts));
  const write = () =>
    commitBatch<RunRow>(
      deps.db,
      [plans],
      [
        {
          name: 'run_rows',
          query: deps.db
            .insertInto('runs')
            .values(built.map((b, i) => rowOf(b.run, plans[i]!.decision)))
            .returningAll(),
          rows: built.length,
        },
        { name: 'facts', query: insertEventsSql(events), rows: events.length },
      ],
      'run_rows',
      [DISPATCH_CHANNEL],
    );
  const counts = async () => {
    const out = {} as Record<(typeof TABLES)[number], number>;
    for (const t of TABLES) {
      const { rows } = await sql<{ n: string | number }>`SELECT count(*) AS n FROM ${sql.table(t)}`.execute(
        deps.db,
      );
      out[t] = Number(rows[0]?.n);
    }
    const tenantRow = await deps.db
      .selectFrom('adm_tenants_now')
      .select(['queued', 'queued_batch', 'running'])
      .where('tenant', '=', tenant)
      .executeTakeFirstOrThrow();
    const root = await deps.db
      .selectFrom('adm_envelopes_now')
      .select(['in_flight', 'spent_runs'])
      .where('tenant', '=', tenant)
      .executeTakeFirstOrThrow();
    return { ...out, ...tenantRow, ...root };
  };
  return { deps, tenant, write, counts, runIds: built.map((b) => b.run.id) };
}

describe('commitBatch (one autocommit statement)', () => {
  it('writes admissions, slots, riders and hot rows together and returns the rider rows', async () => {
    const s = await setup({ maxQueued: 10 });
    const before = await s.counts();
    const out = await s.write();
    if (out === 'raced') throw new Error('unexpected race');
    expect(out.committed.map((r) => r.id).sort()).toEqual([...s.runIds].sort());
    const after = await s.counts();
    for (const t of ['runs', 'adm_admissions', 'adm_slots', 'adm_queue'] as const)
      expect(after[t]).toBe(before[t] + 2);
    expect(after.events).toBeGreaterThan(before.events);
    expect(after.queued).toBe(before.queued + 2);
    expect(after.in_flight).toBe(before.in_flight + 2);
  });

  it('rolls everything back when the queue cap was taken meanwhile (another replica)', async () => {
    const s = await setup({ maxQueued: 3 });
    // The snapshot said 0 queued; another writer has since queued 2: 2 + 2 > 3.
    await s.deps.db.updateTable('adm_tenants').set({ queued: 2 }).where('tenant', '=', s.tenant).execute();
    const before = await s.counts();
    expect(await s.write()).toBe('raced');
    expect(await s.counts()).toEqual(before);
  });

  it('rolls everything back when one of its request ids was admitted meanwhile', async () => {
    const s = await setup({ maxQueued: 10 });
    const ok = await s.write();
    expect(ok).not.toBe('raced');
    const before = await s.counts();
    // The same plans again: every request id is already admitted (and every run id exists).
    expect(await s.write()).toBe('raced');
    expect(await s.counts()).toEqual(before);
  });

  it('rolls everything back when the envelope has no in-flight room left', async () => {
    const s = await setup({ maxQueued: 10, inFlightCap: 3 });
    await s.deps.db
      .updateTable('adm_envelopes')
      .set({ in_flight: 2 })
      .where('tenant', '=', s.tenant)
      .execute();
    const before = await s.counts();
    expect(await s.write()).toBe('raced');
    expect(await s.counts()).toEqual(before);
  });
});
