// The trigger loop: fires due schedule slots and drains the outbox into subscriptions, woken by outbox
// NOTIFYs (coalesced) with a poll fallback. Separate from dispatch so triggers never delay placement.
//
// Every create batch, claim and settle NOTIFYs the outbox channel, so under load the loop runs at most once
// per MIN_GAP_MS (one cycle drains everything settled meanwhile), and ticks schedules at most once per
// wall-clock second: cron slots are whole seconds at the finest (cron-parser's optional seconds field) and
// the ticker fires the latest due slot, so a second tick within the same second could fire nothing new. A
// tick whose slots were all seen fired runs one statement (the schedules' read), no transaction. A process alone
// on its database looks at the outbox only when a fact was heard (and for two polls after it: a look reads below
// the oldest open transaction, which another commit may hold back), else once per `aloneMs` (db/fallback-poll.ts).
// Alone, it reads the schedules only when one was created or enabled here (`schedulesChanged`), when the earliest
// next slot it knows of comes, or once per `aloneMs`: nobody else can have added one.
import { type FallbackPoll, NudgedLooks } from '../db/fallback-poll.js';
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
  /** Which cycles look at the outbox (db/fallback-poll.ts): every fact heard nudges it. */
  private readonly outbox: NudgedLooks;
  /** Which ticks read the schedules: alone, a schedule written here nudges it; the next slots are its deadlines. */
  private readonly schedules: NudgedLooks;

  constructor(
    private readonly deps: Deps,
    pollMs: number,
    fallback?: Pick<FallbackPoll, 'alone' | 'aloneMs'>,
  ) {
    this.outbox = new NudgedLooks(fallback, pollMs, 2 * pollMs);
    this.schedules = new NudgedLooks(fallback, pollMs);
    this.loop = new WakeLoop({
      ldb: deps.ldb,
      channel: EVENTS_CHANNEL,
      pollMs,
      cycle: () => this.cycle(),
      onError: (e) => deps.log('error', 'trigger cycle failed', { error: String(e) }),
      minGapMs: MIN_GAP_MS,
      // A fact announced (not the poll's tick): the outbox may hold something to consume.
      onHeard: (payload) => {
        if (payload !== null) this.outbox.nudge();
      },
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  /** Cycles that did not look at the outbox: alone, and no fact heard since the last look. */
  get skippedOutboxLooks(): number {
    return this.outbox.skipped;
  }

  /** Ticks that did not read the schedules: alone, none written here, no slot of theirs due. */
  get skippedScheduleReads(): number {
    return this.schedules.skipped;
  }

  wake(): void {
    this.outbox.nudge();
    this.loop.wake();
  }

  /** A schedule was created or enabled in this process (Deps.schedulesChanged): the next tick reads them. */
  schedulesChanged(): void {
    this.schedules.nudge();
    this.loop.wake();
  }

  private async cycle(): Promise<void> {
    const now = this.deps.clock().getTime();
    const second = Math.floor(now / 1000);
    if (second !== this.tickedSecond && this.schedules.look(performance.now(), now)) {
      this.tickedSecond = second;
      try {
        await tickSchedules(this.deps, this.slots);
      } catch (e) {
        this.schedules.nudge(); // read again at the next tick
        throw e;
      }
      // The earliest next slot of every schedule it read (a tick before it fires nothing).
      for (const { until } of this.slots.values()) this.schedules.dueBy(until);
    }
    // Alone on the database with no fact heard for a while (a tick of the schedules' poll): nothing was settled.
    if (!this.outbox.look()) return;
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
