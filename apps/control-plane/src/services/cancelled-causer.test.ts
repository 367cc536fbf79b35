// A cancelled run causes nothing more (admission rule `causer_cancelled`, 409): not its own compute still
// holding its lease (POST /runs naming it as causer), not a finished run its cancelled ancestor's cascade
// reaches, not a subscription answering its settle. The refusal writes nothing. On PGlite; the race with the
// cascade is test/cancelled-causer.pg.test.ts.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../db/tx.js';
import { ADMIN_KEY, COMMAND_SPEC, call, runsOf, type TestApp, testApp } from '../http/testing/harness.js';
import { consumeOnce } from '../scheduler/subscriptions-consumer.js';
import { transitionTx } from './lifecycle.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(async () => {
  await t.close();
});

const TENANT = 'default';

async function create(causedBy?: string) {
  return call(t.app, 'POST', '/runs', {
    body: COMMAND_SPEC,
    headers: causedBy ? { 'x-everdict-caused-by': causedBy } : {},
  });
}

async function created(causedBy?: string): Promise<string> {
  const r = await create(causedBy);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}

async function cancel(id: string): Promise<string[]> {
  const r = await call(t.app, 'POST', `/runs/${id}/cancel`, { body: {} });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.cancelled as string[];
}

const children = async (id: string) =>
  (
    await t.core.internals.deps.db
      .selectFrom('adm_slots')
      .select('children')
      .where('tenant', '=', TENANT)
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow()
  ).children;

describe('a cancelled run causes nothing more', () => {
  it('POST /runs naming a cancelled causer: 409 causer_cancelled, nothing written', async () => {
    const root = await created();
    const child = await created(root);
    expect((await cancel(root)).sort()).toEqual([root, child].sort());
    const before = await runsOf(t, TENANT);
    for (const causer of [root, child]) {
      const late = await create(causer);
      expect(late.status, JSON.stringify(late.body)).toBe(409);
      expect(late.body).toMatchObject({ code: 'causer_cancelled', rule: 'causer_cancelled' });
    }
    expect(await runsOf(t, TENANT)).toBe(before);
    expect(await children(root)).toBe(1);
    expect(await children(child)).toBe(0);
  });

  it('a finished run under a cancelled ancestor: the cascade reaches through it, so the gate does too', async () => {
    const root = await created();
    const done = await created(root);
    const deps = t.core.internals.deps;
    await withTx(deps.db, (tx) =>
      transitionTx(tx, deps, TENANT, done, { type: 'fail', error: { code: 'x', message: 'failed' } }),
    );
    // Alive, a finished run may still cause work (a subscription answering its settle).
    const alive = await created(done);
    expect(await cancel(root)).toEqual([root, alive]);
    const before = await runsOf(t, TENANT);
    const late = await create(done);
    expect(late.status, JSON.stringify(late.body)).toBe(409);
    expect(late.body).toMatchObject({ code: 'causer_cancelled' });
    expect(String(late.body.detail)).toContain(root);
    expect(await runsOf(t, TENANT)).toBe(before);
  });

  it("a subscription answering a cancelled run's settle records the refusal and creates nothing", async () => {
    const services = t.core.services;
    const admin = await services.auth.authenticate(ADMIN_KEY);
    const sub = await services.subscriptions.create(admin, {
      name: 'on cancel',
      selector: { kind: 'run.settled', filter: { outcome: 'cancelled' } },
      runSpec: COMMAND_SPEC,
      maxDepth: 5,
    });
    const root = await created();
    await cancel(root);
    const deps = t.core.internals.deps;
    for (let i = 0; i < 100 && (await consumeOnce(deps)) > 0; i++);
    const firings = await deps.db
      .selectFrom('subscription_firings')
      .select(['outcome', 'run_id'])
      .where('subscription_id', '=', sub.id)
      .execute();
    expect(firings).toEqual([{ outcome: 'refused:causer_cancelled:causer_cancelled', run_id: null }]);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM runs
      WHERE tenant_id = ${TENANT} AND caused_by_run_id = ${root}`.execute(deps.db);
    expect(Number(rows[0]?.n)).toBe(0);
    await services.subscriptions.setEnabled(admin, sub.id, false);
  });
});
