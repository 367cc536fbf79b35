// A subscription answers events from its creation or its latest re-enabling on (`enabled_at`, migration 0028):
// re-enabled while the consumer is behind, it does not fire for events from while it was disabled; a schedule
// re-enabled after a slot passed while it was disabled does not fire that slot late. The trigger loop is off
// here: the test drives `consumeOnce` and `tickSchedules` itself, on a clock it moves.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { tickSchedules } from './schedule-ticker.js';
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

const drain = async () => {
  while ((await consumeOnce(t.core.internals.deps)) > 0) {
    /* drain the backlog in one go, as after a restart */
  }
};

const causes = async (runId: string) =>
  (await t.core.services.runs.list(t.admin, { causedBy: runId })).items.map((r) => r.origin.subscriptionId);

it('does not fire a re-enabled subscription for events from while it was disabled, even from a backlog', async () => {
  const { services } = t.core;
  const sub = await services.subscriptions.create(t.admin, onCommand('paused'));
  offsetMs += 1_000;
  const { run: before } = await services.runs.create(t.admin, cmd);
  await drain(); // a live consumer fires it (one that gets to it only after the disable does not)
  offsetMs += 1_000;
  await services.subscriptions.setEnabled(t.admin, sub.id, false);
  offsetMs += 1_000;
  const { run: during } = await services.runs.create(t.admin, cmd);
  offsetMs += 1_000;
  await services.subscriptions.setEnabled(t.admin, sub.id, true);
  offsetMs += 1_000;
  const { run: after } = await services.runs.create(t.admin, cmd);
  await drain();
  expect(await causes(before.id)).toEqual([sub.id]);
  expect(await causes(during.id)).toEqual([]);
  expect(await causes(after.id)).toEqual([sub.id]);
}, 60_000);

it('keeps the time of a subscription enabled again while enabled', async () => {
  const { services } = t.core;
  const sub = await services.subscriptions.create(t.admin, onCommand('still on'));
  offsetMs += 1_000;
  const { run } = await services.runs.create(t.admin, cmd);
  offsetMs += 1_000;
  await services.subscriptions.setEnabled(t.admin, sub.id, true);
  await drain();
  expect(await causes(run.id)).toContain(sub.id);
}, 60_000);

it('fires no slot of a re-enabled schedule that passed while it was disabled; the next one fires', async () => {
  const { services, internals } = t.core;
  const deps = internals.deps;
  const sub = await services.subscriptions.create(t.admin, {
    name: 'every five minutes',
    schedule: { cron: '*/5 * * * *' },
    runSpec: { kind: 'analysis', subject: { config: { fn: 'count_runs' } } },
  });
  expect(await tickSchedules(deps)).toBe(0); // its latest slot is older than the schedule
  offsetMs += 1_000;
  await services.subscriptions.setEnabled(t.admin, sub.id, false);
  offsetMs += 10 * 60_000; // at least one slot passes while it is disabled
  expect(await tickSchedules(deps)).toBe(0);
  await services.subscriptions.setEnabled(t.admin, sub.id, true);
  // Fixed: nothing fires. Before the fix the slot that passed while it was disabled fired now.
  expect(await tickSchedules(deps)).toBe(0);
  offsetMs += 5 * 60_000 + 1_000; // its next slot
  expect(await tickSchedules(deps)).toBe(1);
  const slots = await deps.db
    .selectFrom('schedule_slots')
    .select('slot')
    .where('subscription_id', '=', sub.id)
    .execute();
  expect(slots).toHaveLength(1);
  const enabledAt = (
    await deps.db
      .selectFrom('subscriptions')
      .select('enabled_at')
      .where('id', '=', sub.id)
      .executeTakeFirstOrThrow()
  ).enabled_at;
  expect(slots[0]!.slot.getTime()).toBeGreaterThanOrEqual(enabledAt.getTime());
}, 60_000);
