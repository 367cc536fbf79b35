// Schedules are subscriptions to time events: each due cron slot emits one `schedule.fired` event, exactly
// once per (subscription, slot) even with many replicas (INSERT … ON CONFLICT DO NOTHING decides).
import { SCHEDULE_FIRED } from '@everdict/run-model';
import { CronExpressionParser } from 'cron-parser';
import { withTx } from '../db/tx.js';
import { appendEvents } from '../ledger/events.js';
import type { Deps } from '../services/context.js';

/**
 * Fire the latest due slot of every enabled schedule (missed older slots are not replayed), unless it is older
 * than the schedule's creation or its latest re-enabling (`enabled_at`): a schedule re-enabled after a slot
 * passed while it was disabled does not fire that slot late — its next slot is its first. Returns slots fired.
 */
export async function tickSchedules(deps: Deps): Promise<number> {
  const now = deps.clock();
  const subs = await deps.db
    .selectFrom('subscriptions')
    .select(['id', 'tenant_id', 'schedule_cron', 'schedule_tz', 'enabled_at'])
    .where('schedule_cron', 'is not', null)
    .where('enabled', '=', true)
    .where('deleted_at', 'is', null)
    .execute();
  let fired = 0;
  for (const s of subs) {
    let slot: Date;
    try {
      slot = CronExpressionParser.parse(s.schedule_cron!, {
        currentDate: new Date(now.getTime() + 1),
        tz: s.schedule_tz ?? 'UTC',
      })
        .prev()
        .toDate();
    } catch {
      continue;
    }
    if (slot.getTime() < s.enabled_at.getTime()) continue;
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
    if (won) fired++;
  }
  return fired;
}
