// The trigger loop: fires due schedule slots and drains the outbox into subscriptions, woken by outbox
// NOTIFYs (coalesced) with a poll fallback. Separate from dispatch so triggers never delay placement.
import { EVENTS_CHANNEL } from '../ledger/events.js';
import type { Deps } from '../services/context.js';
import { tickSchedules } from './schedule-ticker.js';
import { consumeOnce } from './subscriptions-consumer.js';
import { WakeLoop } from './wake-loop.js';

export class TriggerLoop {
  private readonly loop: WakeLoop;

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
      againDelayMs: 10,
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  private async cycle(): Promise<void> {
    await tickSchedules(this.deps);
    while (!this.loop.isStopped && (await consumeOnce(this.deps, 500)) > 0) {
      /* drain the outbox */
    }
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
