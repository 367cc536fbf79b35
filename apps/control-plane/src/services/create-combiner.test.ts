// The create combiner decides a batch exactly as sequential creates would: caps (429), budgets (402),
// duplicate requestIds inside one batch.
import { type TenantPolicyInput, tenantPolicy } from '@everdict/admission';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { PgAdmissionStore } from '../admission-store/sql/store.js';
import { ControlPlaneError } from '../errors.js';
import { createCombiner, createOne } from './create-combiner.js';
import type { CreateRunInput } from './types.js';

const cmd = (requestId?: string): CreateRunInput => ({
  kind: 'command',
  subject: { path: 'a', image: 'i', command: ['x'] },
  ...(requestId ? { requestId } : {}),
});

type Outcome = { ok: string; queued: number | null; runId: string } | { status: number; rule: unknown };
const outcome = (r: PromiseSettledResult<Awaited<ReturnType<typeof createOne>>>): Outcome => {
  if (r.status === 'fulfilled') {
    const a = r.value.admission;
    return { ok: a.decision, queued: a.position?.tenantQueued ?? null, runId: r.value.row.id };
  }
  const e = r.reason as ControlPlaneError;
  expect(e).toBeInstanceOf(ControlPlaneError);
  return { status: e.httpStatus, rule: (e.details as { rule?: unknown } | undefined)?.rule };
};
const shape = (o: Outcome) => ('ok' in o ? { ok: o.ok, queued: o.queued } : o);

let cores: TestCore[] = [];
afterEach(async () => {
  await Promise.all(cores.map((c) => c.close()));
  cores = [];
});
/** A core whose bootstrap tenant has exactly this admission policy. */
async function core(policy: TenantPolicyInput) {
  const t = await testCore();
  cores.push(t);
  await new PgAdmissionStore(t.core.internals.deps.db).putTenant(t.admin.tenantId, tenantPolicy(policy));
  return { t, who: { tenant: t.admin.tenantId, actor: t.admin.actor } };
}

describe('create combiner', () => {
  for (const [name, policy] of [
    ['queue cap (429)', { maxQueued: 5 }],
    ['run budget (402)', { maxQueued: 50, budget: { runs: 3 } }],
    ['in-flight cap (429)', { maxQueued: 50, inFlightCap: 4 }],
  ] as const) {
    it(`a batch mixing admitted and refused creates decides like sequential creates: ${name}`, async () => {
      const seq = await core(policy);
      const sequential: Outcome[] = [];
      for (let i = 0; i < 9; i++) {
        const [r] = await Promise.allSettled([createOne(seq.t.core.internals.deps, seq.who, cmd(), {})]);
        sequential.push(outcome(r!));
      }
      const bat = await core(policy);
      const combine = createCombiner(bat.t.core.internals.deps);
      const all = await Promise.allSettled(Array.from({ length: 9 }, () => combine(bat.who, cmd())));
      expect(combine.stats.largest).toBeGreaterThan(1); // the first alone, the other 8 combined
      const combined = all.map(outcome);
      expect(combined.map(shape)).toEqual(sequential.map(shape));
      expect(combined.some((o) => 'status' in o)).toBe(true);
      const db = bat.t.core.internals.deps.db;
      const admitted = combined.filter((o) => 'ok' in o).length;
      const ten = await db
        .selectFrom('adm_tenants')
        .select(['queued'])
        .where('tenant', '=', bat.who.tenant)
        .executeTakeFirstOrThrow();
      expect(ten.queued).toBe(admitted);
      const q = await db.selectFrom('adm_queue').select(['run_id', 'finish']).orderBy('seq').execute();
      expect(q.length).toBe(admitted);
      const finishes = q.map((r) => r.finish);
      expect([...finishes].sort((a, b) => a - b)).toEqual(finishes); // WFQ tags in decision order
    });
  }

  it('admits a requestId repeated inside one batch once; the repeat is a duplicate of it', async () => {
    const { t, who } = await core({ maxQueued: 50 });
    const combine = createCombiner(t.core.internals.deps);
    const ids = ['warm', 'r-a', 'r-b', 'r-a', 'r-c', 'r-a'];
    const all = (await Promise.allSettled(ids.map((id) => combine(who, cmd(id))))).map(outcome);
    expect(combine.stats.largest).toBe(5);
    expect(all.map((o) => ('ok' in o ? o.ok : o.status))).toEqual([
      'admitted',
      'admitted',
      'admitted',
      'duplicate',
      'admitted',
      'duplicate',
    ]);
    const runId = (i: number) => (all[i] as { runId: string }).runId;
    expect(runId(3)).toBe(runId(1));
    expect(runId(5)).toBe(runId(1));
    const db = t.core.internals.deps.db;
    const runs = await db.selectFrom('runs').select('id').execute();
    expect(runs.length).toBe(4);
    // A repeat after the batch committed: the recorded admission, via the snapshot.
    const again = await combine(who, cmd('r-b'));
    expect(again.admission.decision).toBe('duplicate');
    expect(again.row.id).toBe(runId(2));
  });

  it('a batch mixing tenants decides each tenant exactly like its sequential creates', async () => {
    const policies: TenantPolicyInput[] = [
      { maxQueued: 4 },
      { maxQueued: 50, budget: { runs: 2 } },
      { maxQueued: 50, inFlightCap: 3 },
    ];
    const ids = ['zeta', 'alpha-2']; // the second sorts before the bootstrap tenant in some collations
    async function multi() {
      const { t, who } = await core(policies[0]!);
      const whos = [who];
      for (const [n, id] of ids.entries()) {
        const made = await t.core.services.auth.createTenant(t.admin, { id });
        await new PgAdmissionStore(t.core.internals.deps.db).putTenant(id, tenantPolicy(policies[n + 1]!));
        const p = await t.core.services.auth.authenticate(made.key.key);
        whos.push({ tenant: p.tenantId, actor: p.actor });
      }
      return { t, whos };
    }
    // Irregular interleaving; 'same' is one requestId in two tenants (independent), 'rep' repeats in one.
    const order = [0, 1, 2, 0, 0, 1, 2, 2, 1, 0, 2, 1, 0, 2, 0, 1, 2, 2, 0, 1];
    const rid = (i: number) => (i === 4 || i === 5 ? 'same' : i === 7 || i === 10 ? 'rep' : undefined);
    const seq = await multi();
    const sequential: Outcome[] = [];
    for (const [i, n] of order.entries()) {
      const r = await Promise.allSettled([
        createOne(seq.t.core.internals.deps, seq.whos[n]!, cmd(rid(i)), {}),
      ]);
      sequential.push(outcome(r[0]!));
    }
    const bat = await multi();
    const combine = createCombiner(bat.t.core.internals.deps);
    const all = await Promise.allSettled(order.map((n, i) => combine(bat.whos[n]!, cmd(rid(i)))));
    expect(combine.stats.largest).toBe(order.length - 1); // the first alone, all the rest in ONE batch
    const combined = all.map(outcome);
    expect(combined.map(shape)).toEqual(sequential.map(shape));
    expect(combined.some((o) => 'status' in o)).toBe(true);
    const db = bat.t.core.internals.deps.db;
    for (const [n, w] of bat.whos.entries()) {
      const admitted = combined.filter((o, i) => order[i] === n && 'ok' in o && o.ok === 'admitted').length;
      const ten = await db
        .selectFrom('adm_tenants')
        .select('queued')
        .where('tenant', '=', w.tenant)
        .executeTakeFirstOrThrow();
      expect(ten.queued).toBe(admitted);
      const q = await db
        .selectFrom('adm_queue')
        .select('finish')
        .where('tenant', '=', w.tenant)
        .orderBy('seq')
        .execute();
      expect(q.length).toBe(admitted);
      expect([...q.map((r) => r.finish)].sort((a, b) => a - b)).toEqual(q.map((r) => r.finish));
    }
  });
});
