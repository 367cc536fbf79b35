// Two rules the SQL store shares with admission's kernel, checked on both (the memory store and this one):
//   - WFQ: cancelled queue entries are not banked against their tenant — with no live entry left in a lane,
//     the next one starts at the class clock (wfq.ts `Wfq.enqueue`; wfq-tags.ts);
//   - budgets compare in whole micro-dollars (envelope.ts `toMicroUsd`; budget.ts): an exact decimal fit is
//     admitted, one micro-dollar more refused — on the create path's statement (commit-batch.ts, a root task)
//     and the one-by-one commit (commit.ts, a child drawing on a slice) alike.
import {
  type AdmissionPlan,
  type AdmissionStore,
  admit,
  configureGlobal,
  configureTenant,
  decide,
  dequeue,
  MemoryAdmissionStore,
  parseAdmissionRequest,
  release,
} from '@everdict/admission';
import { task } from '@everdict/admission/contract';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type TestDatabase, testDatabase } from '../../../test/db.js';
import { commitBatch } from './commit-batch.js';
import { PgAdmissionStore } from './store.js';

let d: TestDatabase;
beforeAll(async () => {
  d = await testDatabase({ poolSize: 2 });
});
afterAll(async () => d.dispose());
// Each test starts from empty admission tables and class clocks at 0, as a fresh memory store does.
beforeEach(async () => {
  await sql`TRUNCATE adm_global, adm_tenants, adm_agents, adm_envelopes, adm_admissions, adm_slots, adm_queue,
    adm_wfq, adm_envelope_releases, adm_tenant_releases, adm_slot_ends`.execute(d.db);
  await sql`UPDATE adm_vtime SET v = 0`.execute(d.db);
});

/** The outcome of an admission, or the code of the error it threw (a refused SQL re-check: 'contended'). */
async function outcome(s: AdmissionStore, input: Parameters<typeof admit>[1]): Promise<string> {
  return admit(s, input, 0).then(
    (v) => (v.outcome === 'admitted' ? 'admitted' : `${v.outcome}:${v.status}:${v.rule}`),
    (e: unknown) => `error:${(e as { code?: string }).code ?? String(e)}`,
  );
}

describe('kernel parity: WFQ cancellations', () => {
  it('starts a tenant whose queued runs were all cancelled at the class clock (both stores)', async () => {
    for (const s of [new MemoryAdmissionStore(), new PgAdmissionStore(d.db)] as AdmissionStore[]) {
      await configureGlobal(s, { agingMs: 1_000_000_000 });
      for (const t of ['wa', 'wb']) await configureTenant(s, t, { maxConcurrent: 1000, maxQueued: 1000 });
      for (let i = 0; i < 100; i++) await admit(s, task('wb', `b${i}`, { class: 'batch' }), 0);
      for (let i = 0; i < 100; i++) await admit(s, task('wa', `a${i}`, { class: 'batch' }), 0);
      for (let i = 0; i < 100; i++) {
        const r = await release(s, { tenant: 'wa', runId: `a${i}`, status: 'cancelled' }, 0);
        expect(r.settled).toBe(true);
      }
      await admit(s, task('wa', 'probe', { class: 'batch' }), 0);
      const order = (await dequeue(s, 4, 0)).map((x) => x.runId);
      expect(order, s.constructor.name).toEqual(['b0', 'probe', 'b1', 'b2']);
    }
  });

  // The same through the one-by-one commit (commit.ts): children of a running agent run are not batchable.
  it('does so for runs committed one by one as well (children of an agent run)', async () => {
    for (const s of [new MemoryAdmissionStore(), new PgAdmissionStore(d.db)] as AdmissionStore[]) {
      await configureGlobal(s, { agingMs: 1_000_000_000 });
      for (const t of ['wc', 'wd']) await configureTenant(s, t, { maxConcurrent: 1000, maxQueued: 1000 });
      await admit(s, task('wc', 'ag', { kind: 'agent', class: 'interactive' }), 0);
      expect((await dequeue(s, 1, 0)).map((x) => x.runId)).toEqual(['ag']);
      const child = (runId: string) =>
        task('wc', runId, { class: 'batch', cause: 'run', causedByRunId: 'ag' });
      for (let i = 0; i < 60; i++) await admit(s, task('wd', `d${i}`, { class: 'batch' }), 0);
      for (let i = 0; i < 60; i++) expect((await admit(s, child(`c${i}`), 0)).outcome).toBe('admitted');
      for (let i = 0; i < 60; i++) await release(s, { tenant: 'wc', runId: `c${i}`, status: 'cancelled' }, 0);
      await admit(s, child('probe2'), 0);
      const order = (await dequeue(s, 4, 0)).map((x) => x.runId);
      expect(order, s.constructor.name).toEqual(['d0', 'probe2', 'd1', 'd2']);
    }
  });
});

describe('kernel parity: policy bounds', () => {
  // The policy schema took any safe integer; the SQL store keeps these counts in integer columns (or casts
  // them ::int), so 2^31 answered a raw 22003 (a 500) where the memory store took it: both refuse it (400).
  it('refuses counts past the int4 range with a 400 on both stores, and leaves the tenant unknown', async () => {
    const big = 2 ** 31;
    const inputs = [
      { maxQueued: big },
      { maxConcurrent: big },
      { maxChildrenPerRun: big },
      { inFlightCap: big },
      { budget: { runs: big } },
      { session: { maxSessions: big, memberReserve: 0 } },
    ];
    for (const s of [new MemoryAdmissionStore(), new PgAdmissionStore(d.db)] as AdmissionStore[]) {
      for (const policy of inputs) {
        const error = await configureTenant(s, 'bounds', policy).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error, `${s.constructor.name} ${JSON.stringify(policy)}`).toMatchObject({
          code: 'bad_request',
          httpStatus: 400,
        });
      }
      expect((await s.loadAdmission({ tenant: 'bounds', requestId: 'r' })).policy).toBeNull();
      await expect(configureGlobal(s, { maxSessions: big })).rejects.toMatchObject({ code: 'bad_request' });
      // The request's own slice: its in-flight cap and runs cap are integer columns too.
      await configureTenant(s, 'bounds', { maxQueued: 2 ** 31 - 1 });
      const slice = { id: 'bounds-s', inFlightCap: big };
      await expect(admit(s, task('bounds', 'b1', { envelope: slice }), 0)).rejects.toMatchObject({
        code: 'bad_request',
      });
      const runs = { id: 'bounds-s', caps: { runs: big } };
      await expect(admit(s, task('bounds', 'b2', { envelope: runs }), 0)).rejects.toMatchObject({
        code: 'bad_request',
      });
      expect(await outcome(s, task('bounds', 'b3'))).toBe('admitted');
    }
  });
});

describe('kernel parity: budgets in micro-dollars', () => {
  it('admits cap 0.3 − spent 0.1 ≥ estimate 0.2 and refuses 0.200001 (both stores, both commit paths)', async () => {
    for (const make of [() => new MemoryAdmissionStore(), () => new PgAdmissionStore(d.db)]) {
      const s: AdmissionStore = make();
      const t = `exact-${s.constructor.name}`;
      await configureTenant(s, t, { budget: { usd: 0.3 }, maxConcurrent: 1000 });
      expect(await outcome(s, task(t, `${t}-agent`, { kind: 'agent', envelope: { id: `${t}-s` } }))).toBe(
        'admitted',
      );
      expect(await outcome(s, task(t, `${t}-r1`))).toBe('admitted');
      await dequeue(s, 10_000, 0);
      await release(s, { tenant: t, runId: `${t}-r1`, status: 'succeeded', actuals: { usd: 0.1 } }, 0);
      const child = { cause: 'run' as const, causedByRunId: `${t}-agent` };
      for (const [id, extra] of [
        ['root', {}],
        ['child', child],
      ] as const) {
        expect(await outcome(s, task(t, `${t}-${id}-over`, { ...extra, estimate: { usd: 0.200001 } }))).toBe(
          'refused:402:envelope',
        );
        expect(await outcome(s, task(t, `${t}-${id}-fit`, { ...extra, estimate: { usd: 0.2 } }))).toBe(
          'admitted',
        );
      }
    }
  });

  // A cap written as "practically unlimited" (1e303: any finite number the create schema takes) overflowed the
  // SQL guard's float8 product (cap × 1e6 > 1.8e308: SQLSTATE 22003, a 500 on POST /runs) where the kernel
  // admitted: amounts count as at most MAX_USD in both.
  it('admits under a usd cap past the float8 range of micro-dollars, and still refuses a spent one (both stores)', async () => {
    for (const s of [new MemoryAdmissionStore(), new PgAdmissionStore(d.db)] as AdmissionStore[]) {
      const t = `huge-${s.constructor.name}`;
      await configureTenant(s, t, { budget: { usd: Number.MAX_VALUE }, maxConcurrent: 1000 });
      expect(await outcome(s, task(t, `${t}-root`)), s.constructor.name).toBe('admitted');
      const slice = { id: `${t}-s`, caps: { usd: 1e303 } };
      expect(await outcome(s, task(t, `${t}-agent`, { kind: 'agent', envelope: slice }))).toBe('admitted');
      const child = { cause: 'run' as const, causedByRunId: `${t}-agent` };
      expect(await outcome(s, task(t, `${t}-c1`, child)), s.constructor.name).toBe('admitted');
      await dequeue(s, 10_000, 0);
      const big = { usd: 2e302, tokens: 0 };
      expect(
        (await release(s, { tenant: t, runId: `${t}-c1`, status: 'succeeded', actuals: big }, 0)).settled,
      ).toBe(true);
      // Spent 2e302 of 1e303 counts as spent MAX_USD of MAX_USD: refused, on both stores alike.
      expect(await outcome(s, task(t, `${t}-c2`, child)), s.constructor.name).toBe('refused:402:envelope');
    }
  });

  // The create path's statement alone (the store falls back to the one-by-one commit when it answers 'raced').
  it('has the create statement (commit-batch.ts) admit the exact fit and refuse one micro-dollar more', async () => {
    const pg = new PgAdmissionStore(d.db);
    await configureTenant(pg, 'cb', { budget: { usd: 0.3 }, maxConcurrent: 1000 });
    await admit(pg, task('cb', 'cb-r1'), 0);
    await dequeue(pg, 10, 0);
    await release(pg, { tenant: 'cb', runId: 'cb-r1', status: 'succeeded', actuals: { usd: 0.1 } }, 0);
    const plan = async (runId: string, usd: number): Promise<AdmissionPlan> => {
      const request = parseAdmissionRequest(task('cb', runId, { estimate: { usd: 0.2 } }));
      const v = decide(await pg.loadAdmission(request), request, 0);
      if (!('plan' in v)) throw new Error(`expected a plan, got ${JSON.stringify(v)}`);
      return { ...v.plan, guards: { ...v.plan.guards, estimate: { usd, tokens: 0 } } };
    };
    const over = await plan('cb-over', 0.200001);
    expect(await commitBatch(d.db, [[over]], [], 'q')).toBe('raced');
    const fit = await plan('cb-fit', 0.2);
    expect(await commitBatch(d.db, [[fit]], [], 'q')).not.toBe('raced');
  });

  // Oracle: integer micro-dollars. Runs are admitted (estimate 0) and settled with random charges, then runs
  // with random estimates, or estimates within one micro-dollar of the balance left; every answer must be the
  // oracle's, on both stores.
  it('answers as integer micro-dollar arithmetic does, on both stores (property)', async () => {
    const micros = fc.integer({ min: 0, max: 3_000_000 });
    const step = fc.oneof(
      fc.record({ charge: micros }),
      fc.record({ estimate: micros, child: fc.boolean() }),
      fc.record({ edge: fc.integer({ min: -1, max: 1 }), child: fc.boolean() }),
    );
    let round = 0;
    await fc.assert(
      // cap ≥ 1 µ$: the agent run (estimate 0) whose slice the children draw on is admitted.
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3_000_000 }),
        fc.array(step, { minLength: 1, maxLength: 10 }),
        async (cap, steps) => {
          round++;
          const t = `prop${round}`;
          const stores: AdmissionStore[] = [new MemoryAdmissionStore(), new PgAdmissionStore(d.db)];
          for (const s of stores) {
            await configureTenant(s, t, { budget: { usd: cap / 1e6 }, maxConcurrent: 1000 });
            await admit(s, task(t, `${t}-agent`, { kind: 'agent', envelope: { id: `${t}-s` } }), 0);
          }
          let spent = 0;
          let n = 0;
          for (const o of steps) {
            const estimate =
              'charge' in o ? 0 : 'estimate' in o ? o.estimate : Math.max(0, cap - spent + o.edge);
            const fits = spent < cap && cap - spent >= estimate;
            const runId = `${t}-r${n++}`;
            const extra =
              'child' in o && o.child ? { cause: 'run' as const, causedByRunId: `${t}-agent` } : {};
            for (const s of stores) {
              const got = await outcome(s, task(t, runId, { ...extra, estimate: { usd: estimate / 1e6 } }));
              expect(got, `${s.constructor.name} ${runId}`).toBe(fits ? 'admitted' : 'refused:402:envelope');
            }
            if ('charge' in o && fits) {
              for (const s of stores) {
                await dequeue(s, 10_000, 0);
                const usd = o.charge / 1e6;
                const r = await release(s, { tenant: t, runId, status: 'succeeded', actuals: { usd } }, 0);
                expect(r.settled).toBe(true);
              }
              spent += o.charge;
            }
          }
        },
      ),
      { numRuns: Number(process.env.BUDGET_PARITY_RUNS ?? 40) },
    );
  }, 300_000);
});
