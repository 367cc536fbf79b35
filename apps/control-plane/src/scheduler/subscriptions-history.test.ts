// A subscription answers events from its creation on. A consumer that is behind (a restart's backlog, a
// cycle's lag) while another subscription keeps the cursor from skipping never fires a new subscription
// for an event older than itself. The trigger loop is off here: the test drives `consumeOnce` itself.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { consumeOnce } from './subscriptions-consumer.js';

let t: TestCore;
let offsetMs = 0;
beforeAll(async () => {
  t = await testCore({ scheduler: { enabled: false }, clock: () => new Date(Date.now() + offsetMs) });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
const onCommand = (name: string) => ({
  name,
  selector: { kind: 'run.queued', filter: { kind: 'command' } },
  runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
});

it('fires a subscription only for events after its creation, even from a backlog', async () => {
  const { services, internals } = t.core;
  const older = await services.subscriptions.create(t.admin, onCommand('older'));
  const { run: before } = await services.runs.create(t.admin, cmd);
  offsetMs += 1_000; // the next subscription is unambiguously younger than the run's events
  const newer = await services.subscriptions.create(t.admin, onCommand('newer'));
  const { run: after } = await services.runs.create(t.admin, cmd);
  while ((await consumeOnce(internals.deps)) > 0) {
    /* drain the backlog */
  }
  const causes = async (runId: string) =>
    (await services.runs.list(t.admin, { causedBy: runId })).items.map((r) => r.origin.subscriptionId).sort();
  expect(await causes(before.id)).toEqual([older.id]);
  expect(await causes(after.id)).toEqual([older.id, newer.id].sort());
  const newerFirings = await internals.deps.db
    .selectFrom('subscription_firings')
    .select('outcome')
    .where('subscription_id', '=', newer.id)
    .execute();
  expect(newerFirings.map((f) => f.outcome)).toEqual(['created']);
}, 60_000);

it('measures a cooldown between the events, so a drained backlog fires what a live consumer would', async () => {
  const { services, internals } = t.core;
  const sub = await services.subscriptions.create(t.admin, { ...onCommand('cooled'), cooldownSec: 60 });
  offsetMs += 1_000;
  const { run: first } = await services.runs.create(t.admin, cmd);
  offsetMs += 1_000; // within the cooldown of the first
  const { run: soon } = await services.runs.create(t.admin, cmd);
  offsetMs += 120_000; // well past it
  const { run: later } = await services.runs.create(t.admin, cmd);
  while ((await consumeOnce(internals.deps)) > 0) {
    /* drain the backlog in one go, as after a restart */
  }
  const firings = await internals.deps.db
    .selectFrom('subscription_firings')
    .innerJoin('events', 'events.id', 'subscription_firings.event_id')
    .select(['events.run_id', 'subscription_firings.outcome'])
    .where('subscription_id', '=', sub.id)
    .execute();
  const outcome = (runId: string) => firings.filter((f) => f.run_id === runId).map((f) => f.outcome);
  expect(outcome(first.id)).toEqual(['created']);
  expect(outcome(soon.id)).toEqual(['refused:cooldown']);
  expect(outcome(later.id)).toEqual(['created']);
}, 60_000);
