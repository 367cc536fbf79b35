// The trigger loop: fires due schedule slots and drains the outbox into subscriptions, woken by outbox
// NOTIFYs (coalesced) with a poll fallback. Separate from dispatch so triggers never delay placement.
import { EVENTS_CHANNEL } from '../ledger/events.js';
import type { Deps } from '../services/context.js';
import { tickSchedules } from './schedule-ticker.js';
import { consumeOnce } from './subscriptions-consumer.js';

export class TriggerLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly deps: Deps,
    private readonly pollMs: number,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.unlisten = await this.deps.ldb.listen(EVENTS_CHANNEL, () => this.wake());
    this.timer = setInterval(() => this.wake(), this.pollMs);
    this.timer.unref?.();
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.cycle()
      .catch((e: unknown) => this.deps.log('error', 'trigger cycle failed', { error: String(e) }))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          setTimeout(() => this.wake(), 10).unref?.();
        }
      });
  }

  private async cycle(): Promise<void> {
    await tickSchedules(this.deps);
    while (!this.stopped && (await consumeOnce(this.deps, 500)) > 0) {
      /* drain the outbox */
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.unlisten?.();
    await this.running;
  }
}
