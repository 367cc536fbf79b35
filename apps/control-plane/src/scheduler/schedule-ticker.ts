// Schedules are subscriptions to time events: each due cron slot emits one `schedule.fired` event, exactly
// once per (subscription, slot) even with many replicas (INSERT … ON CONFLICT DO NOTHING decides).
//
// A tick runs every wall-clock second (trigger-loop.ts), but a schedule's latest due slot changes once per
// slot: a `SlotMemo` remembers, per schedule, the slot whose row this process saw written (fired here, or
// found fired by another replica) and when the next slot falls, so a tick before then runs no transaction and
// evaluates no cron for it. The memo is keyed by what decides the slot (cron, time zone, `enabled_at`): an
// edited or re-enabled schedule is looked at afresh. Without it, every enabled schedule cost a transaction a
// second on every replica.
import { SCHEDULE_FIRED } from '@everdict/run-model';
import { CronExpressionParser } from 'cron-parser';
import { withTx } from '../db/tx.js';
import { appendEvents } from '../ledger/events.js';
import type { Deps } from '../services/context.js';

/**
 * Per schedule, what the last tick learned: for which `basis` (cron, time zone, `enabled_at`), the latest due
 * slot whose `schedule_slots` row is known to exist (epoch ms; NaN: none — the slot preceded `enabled_at`), and
 * `until`, that slot's successor: before it, the latest due slot is the same one, and the tick skips the schedule.
 */
export type SlotMemo = Map<string, { readonly basis: string; readonly slot: number; readonly until: number }>;

/**
 * Fire the latest due slot of every enabled schedule (missed older slots are not replayed), unless it is older
 * than the schedule's creation or its latest re-enabling (`enabled_at`): a schedule re-enabled after a slot
 * passed while it was disabled does not fire that slot late — its next slot is its first. Returns slots fired.
 * With a `memo` (the trigger loop's, kept across ticks), a slot already seen written is not tried again.
 */
export async function tickSchedules(deps: Deps, memo?: SlotMemo): Promise<number> {
  const now = deps.clock();
  const subs = await deps.db
    .selectFrom('subscriptions')
    .select(['id', 'tenant_id', 'schedule_cron', 'schedule_tz', 'enabled_at'])
    .where('schedule_cron', 'is not', null)
    .where('enabled', '=', true)
    .where('deleted_at', 'is', null)
    .execute();
  let fired = 0;
  // Schedules gone (deleted, disabled, no longer a schedule) leave the memo.
  if (memo) {
    const live = new Set(subs.map((s) => s.id));
    for (const id of memo.keys()) if (!live.has(id)) memo.delete(id);
  }
  for (const s of subs) {
    const cron = s.schedule_cron!;
    const tz = s.schedule_tz ?? 'UTC';
    const basis = `${cron} ${tz} ${s.enabled_at.getTime()}`;
    const seen = memo?.get(s.id);
    if (seen?.basis === basis && now.getTime() < seen.until) continue;
    let slot: Date;
    try {
      slot = CronExpressionParser.parse(cron, { currentDate: new Date(now.getTime() + 1), tz })
        .prev()
        .toDate();
    } catch {
      continue;
    }
    if (slot.getTime() < s.enabled_at.getTime()) {
      memo?.set(s.id, { basis, slot: Number.NaN, until: successor(cron, tz, slot) });
      continue;
    }
    if (seen?.basis === basis && seen.slot === slot.getTime()) continue;
    const won = await withTx(deps.db, async (tx) => {
      const claimed = await tx
        .insertInto('schedule_slots')
        .values({ subscription_id: s.id, slot, event_id: null, created_at: now })
        .onConflict((oc) => oc.columns(['subscription_id', 'slot']).doNothing())
        .returning('slot')
        .executeTakeFirst();
      if (!claimed) return false;
      const [eventId] = await appendEvents(tx, [
        {
          tenant: s.tenant_id,
          kind: SCHEDULE_FIRED,
          at: now.toISOString(),
          data: { scheduleId: s.id, firedAt: slot.toISOString(), cron: s.schedule_cron! },
        },
      ]);
      await tx
        .updateTable('schedule_slots')
        .set({ event_id: eventId! })
        .where('subscription_id', '=', s.id)
        .where('slot', '=', slot)
        .execute();
      return true;
    });
    // Committed either way: this process fired the slot, or its row was already there.
    memo?.set(s.id, { basis, slot: slot.getTime(), until: successor(cron, tz, slot) });
    if (won) fired++;
  }
  return fired;
}

/** The slot after `slot` (epoch ms); the slot itself when the cron has none, so the next tick parses again. */
/**
 * The first slot of a schedule after `now`: when an enabled schedule fires next (the subscription view's
 * `nextFireAt`; the ticker fires each slot once it is due). Null for a cron that no longer parses.
 */
export function nextSlot(cron: string, tz: string, now: Date): Date | null {
  try {
    return CronExpressionParser.parse(cron, { currentDate: now, tz }).next().toDate();
  } catch {
    return null;
  }
}

function successor(cron: string, tz: string, slot: Date): number {
  try {
    return CronExpressionParser.parse(cron, { currentDate: slot, tz }).next().toDate().getTime();
  } catch {
    return slot.getTime();
  }
}
