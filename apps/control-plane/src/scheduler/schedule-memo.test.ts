// The trigger loop ticks schedules every second; a schedule's latest slot changes once per slot. With the
// loop's memo, a tick whose slot was already seen written runs no transaction for that schedule: one read of
// the schedules, nothing else. The loop is off here: the test drives `tickSchedules` on a clock it moves and
// counts the statements each tick sends (a kysely plugin on the core's own database).
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import type { Deps } from '../services/context.js';
import { type SlotMemo, tickSchedules } from './schedule-ticker.js';

let t: TestCore;
let offsetMs = 0;
beforeAll(async () => {
  t = await testCore({ scheduler: { enabled: false }, clock: () => new Date(Date.now() + offsetMs) });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

/** The core's deps with a database that records the kind of every statement sent through it. */
function counted(): { deps: Deps; kinds: string[] } {
  const kinds: string[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: ({ node }) => {
      kinds.push(node.kind);
      return node as RootOperationNode;
    },
    transformResult: async ({ result }) => result,
  };
  const deps = t.core.internals.deps;
  return { deps: { ...deps, db: deps.db.withPlugin(plugin) }, kinds };
}

/** An enabled schedule firing every minute (an `echo` analysis run each slot). */
const everyMinute = (name: string) =>
  t.core.services.subscriptions.create(t.admin, {
    name,
    schedule: { cron: '* * * * *' },
    runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
  });

const slotsOf = async (id: string) =>
  (
    await t.core.internals.deps.db
      .selectFrom('schedule_slots')
      .select('slot')
      .where('subscription_id', '=', id)
      .execute()
  ).length;

it('tries a slot once: later ticks in it send only the schedules read, and a new slot is fired', async () => {
  const sub = await everyMinute('every minute');
  offsetMs += 61_000; // a slot after the schedule's creation is due
  const memo: SlotMemo = new Map();
  const first = counted();
  expect(await tickSchedules(first.deps, memo)).toBe(1);
  expect(first.kinds).toContain('InsertQueryNode');
  // Until the next minute's slot, the schedule is skipped without even reading its cron again.
  const seen = memo.get(sub.id);
  expect(seen?.until).toBe((seen?.slot ?? 0) + 60_000);
  expect(seen?.until).toBeGreaterThan(Date.now() + offsetMs);

  const again = counted();
  expect(await tickSchedules(again.deps, memo)).toBe(0);
  expect(again.kinds).toEqual(['SelectQueryNode']);

  // Without the memo the same tick tries the slot again (and finds it fired): what the memo saves.
  const bare = counted();
  expect(await tickSchedules(bare.deps)).toBe(0);
  expect(bare.kinds).toContain('InsertQueryNode');
  expect(await slotsOf(sub.id)).toBe(1);

  offsetMs += 60_000; // the next slot
  expect(await tickSchedules(counted().deps, memo)).toBe(1);
  expect(await slotsOf(sub.id)).toBe(2);
  await t.core.services.subscriptions.setEnabled(t.admin, sub.id, false);
});

it('waits for the first slot after a schedule was enabled without trying the one before it', async () => {
  const sub = await everyMinute('every minute, new');
  const memo: SlotMemo = new Map();
  const before = counted();
  expect(await tickSchedules(before.deps, memo)).toBe(0);
  expect(before.kinds).toEqual(['SelectQueryNode']);
  const seen = memo.get(sub.id);
  expect(Number.isNaN(seen?.slot)).toBe(true); // no slot known written: the latest preceded `enabled_at`
  offsetMs = Math.max(offsetMs, (seen?.until ?? 0) - Date.now()); // the first slot after the creation
  expect(await tickSchedules(counted().deps, memo)).toBe(1);
  expect(await slotsOf(sub.id)).toBe(1);
  await t.core.services.subscriptions.setEnabled(t.admin, sub.id, false);
});

it('learns a slot another replica fired, and forgets schedules no longer enabled', async () => {
  const sub = await everyMinute('every minute, two replicas');
  offsetMs += 61_000;
  expect(await tickSchedules(t.core.internals.deps, new Map())).toBe(1); // the other replica
  const memo: SlotMemo = new Map();
  const lost = counted();
  expect(await tickSchedules(lost.deps, memo)).toBe(0);
  expect(lost.kinds).toContain('InsertQueryNode');
  const after = counted();
  expect(await tickSchedules(after.deps, memo)).toBe(0);
  expect(after.kinds).toEqual(['SelectQueryNode']);

  await t.core.services.subscriptions.setEnabled(t.admin, sub.id, false);
  await tickSchedules(t.core.internals.deps, memo);
  expect(memo.has(sub.id)).toBe(false);
  expect(await slotsOf(sub.id)).toBe(1);
});
