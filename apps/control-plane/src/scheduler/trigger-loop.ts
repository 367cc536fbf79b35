// The trigger loop: fires due schedule slots and drains the outbox into subscriptions, woken by outbox
// NOTIFYs (coalesced) with a poll fallback. Separate from dispatch so triggers never delay placement.
//
// Every create batch, claim and settle NOTIFYs the outbox channel, so under load the loop runs at most once
// per MIN_GAP_MS (one cycle drains everything settled meanwhile), and ticks schedules at most once per
// wall-clock second: cron slots are whole seconds at the finest (cron-parser's optional seconds field) and
// the ticker fires the latest due slot, so a second tick within the same second could fire nothing new. A
// tick whose slots were all seen fired runs one statement (the schedules' read), no transaction.
import { EVENTS_CHANNEL } from '../ledger/events.js';
import type { Deps } from '../services/context.js';
import { type SlotMemo, tickSchedules } from './schedule-ticker.js';
import { consumeOnce, skipOrPending } from './subscriptions-consumer.js';
import { WakeLoop } from './wake-loop.js';

export const MIN_GAP_MS = 50;
const BATCH = 500;

export class TriggerLoop {
  private readonly loop: WakeLoop;
  /** The wall-clock second of the last schedule tick. */
  private tickedSecond = Number.NEGATIVE_INFINITY;
  /** The slots this process has seen fired, per schedule (schedule-ticker.ts). */
  private readonly slots: SlotMemo = new Map();

  constructor(
    private readonly deps: Deps,
    pollMs: number,
  ) {
    this.loop = new WakeLoop({
      ldb: deps.ldb,
      channel: EVENTS_CHANNEL,
      pollMs,
      cycle: () => this.cycle(),
      onError: (e) => deps.log('error', 'trigger cycle failed', { error: String(e) }),
      minGapMs: MIN_GAP_MS,
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  private async cycle(): Promise<void> {
    const second = Math.floor(this.deps.clock().getTime() / 1000);
    if (second !== this.tickedSecond) {
      this.tickedSecond = second;
      await tickSchedules(this.deps, this.slots);
    }
    // One statement: without any subscription it moves the cursor past everything settled (nothing could
    // fire); otherwise it says whether anything is pending, and the consuming transaction runs only then.
    if ((await skipOrPending(this.deps)) !== 'pending') return;
    // A short batch means caught up (or another replica holds the cursor): no empty transaction after it.
    while (!this.loop.isStopped && (await consumeOnce(this.deps, BATCH)) === BATCH) {
      /* drain the outbox */
    }
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
