// A subscription is checked when it is created by run-model's own Subscription schema, exactly as every firing
// reads it: a session TTL past MAX_SESSION_TTL_SEC is refused then (400 out_of_range naming the body field
// runSpec.ttlSec, in the edge's shape; POST /runs refuses the same spec too; nothing saved) — never accepted
// and refused at each firing — while a one-shot run's ttlSec, which is no session TTL, is taken as POST /runs
// takes it.
import { MAX_SESSION_TTL_SEC } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../test/core.js';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { tickSchedules } from '../scheduler/schedule-ticker.js';
import { consumeOnce } from '../scheduler/subscriptions-consumer.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(() => t.close(), 60_000);

const session = (ttlSec: number) => ({
  kind: 'sandbox',
  subject: { image: 'alpine:3.20' },
  lifetime: 'session',
  ttlSec,
});
const analysis = (ttlSec: number) => ({ kind: 'analysis', subject: { config: { fn: 'echo' } }, ttlSec });

async function subscriptionRows(): Promise<number> {
  const r = await t.core.internals.deps.db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describe('a subscription’s run template, checked at creation as it fires', { timeout: 120_000 }, () => {
  it('a session TTL past MAX_SESSION_TTL_SEC → 400 out_of_range naming runSpec.ttlSec, nothing saved', async () => {
    const before = await subscriptionRows();
    for (const ttlSec of [MAX_SESSION_TTL_SEC + 1, 400 * 86_400, 2 ** 31 - 1]) {
      const r = await call(t.app, 'POST', '/subscriptions', {
        body: { name: 'long session', selector: { kind: 'run.queued' }, runSpec: session(ttlSec) },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe('out_of_range');
      expect(r.body.issues).toEqual([expect.objectContaining({ path: ['runSpec', 'ttlSec'], in: 'body' })]);
      expect(r.body.detail).toMatch(/^body field "runSpec\.ttlSec": /);
      expect(r.body).not.toHaveProperty('details');
      // POST /runs refuses the same spec the same way (out_of_range naming its body field ttlSec).
      const run = await call(t.app, 'POST', '/runs', { body: session(ttlSec) });
      expect(run.status).toBe(400);
      expect(run.body.code).toBe('out_of_range');
      expect(run.body.issues).toEqual([expect.objectContaining({ path: ['ttlSec'], in: 'body' })]);
    }
    expect(await subscriptionRows()).toBe(before);
    const ok = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 'year session', selector: { kind: 'run.queued' }, runSpec: session(MAX_SESSION_TTL_SEC) },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    await call(t.app, 'DELETE', `/subscriptions/${ok.body.id as string}`);
  });

  it('a one-shot run’s ttlSec past a year is no session TTL: created, and it fires', async () => {
    const ttlSec = 400 * 86_400;
    expect((await call(t.app, 'POST', '/runs', { body: analysis(ttlSec) })).status).toBe(201);
    const sub = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 'long one-shot', schedule: { cron: '* * * * *' }, runSpec: analysis(ttlSec) },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const deps = t.core.internals.deps;
    expect(await tickSchedules({ ...deps, clock: () => new Date(Date.now() + 61_000) })).toBe(1);
    await eventually(async () => ((await consumeOnce(deps)) > 0 ? true : undefined));
    const firing = await deps.db
      .selectFrom('subscription_firings')
      .selectAll()
      .where('subscription_id', '=', sub.body.id as string)
      .executeTakeFirstOrThrow();
    expect(firing.outcome).toBe('created');
    const run = await call(t.app, 'GET', `/runs/${firing.run_id}`);
    expect(run.body.origin).toMatchObject({ cause: 'schedule', subscriptionId: sub.body.id });
  });
});
