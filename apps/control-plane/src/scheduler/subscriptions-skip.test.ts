// Without any subscription the outbox costs one statement per trigger cycle: the cursor moves past what is
// settled, no event is read in a transaction, and a subscription created afterwards fires only for events
// after it — never for the history it skipped.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { SUBSCRIPTIONS_CONSUMER } from './subscriptions-consumer.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

it('skips the outbox while nothing is subscribed; a later subscription fires for later events only', async () => {
  const { services, internals } = t.core;
  const db = internals.deps.db;
  const before = await services.runs.create(t.admin, cmd);
  const lastEvent = await db
    .selectFrom('events')
    .select(['id'])
    .where('run_id', '=', before.run.id)
    .executeTakeFirstOrThrow();
  // The cursor passes the run's events with no subscription in place (the skip, not a consume).
  await eventually(async () => {
    const c = await db
      .selectFrom('consumer_cursors')
      .selectAll()
      .where('consumer', '=', SUBSCRIPTIONS_CONSUMER)
      .executeTakeFirst();
    return c && BigInt(c.event_id) >= BigInt(lastEvent.id) ? true : undefined;
  });
  const sub = await services.subscriptions.create(t.admin, {
    name: 'on command',
    selector: { kind: 'run.queued', filter: { kind: 'command' } },
    runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
  });
  const after = await services.runs.create(t.admin, cmd);
  const fired = await eventually(async () => {
    const rows = await db
      .selectFrom('subscription_firings')
      .select(['event_id', 'outcome'])
      .where('subscription_id', '=', sub.id)
      .execute();
    return rows.length > 0 ? rows : undefined;
  });
  expect(fired.map((r) => r.outcome)).toEqual(['created']);
  expect((await services.runs.list(t.admin, { causedBy: after.run.id })).items).toHaveLength(1);
  expect((await services.runs.list(t.admin, { causedBy: before.run.id })).items).toEqual([]);
}, 60_000);
