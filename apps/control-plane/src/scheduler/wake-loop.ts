// A loop woken by NOTIFY on one channel, with a poll as the fallback. Wakes coalesce: a wake that arrives
// while a cycle runs schedules exactly one more cycle after it. stop() waits for the cycle in flight.
import type { LedgerDatabase } from '../db/database.js';

export interface WakeLoopOptions {
  ldb: Pick<LedgerDatabase, 'listen'>;
  channel: string;
  pollMs: number;
  cycle: () => Promise<void>;
  onError: (e: unknown) => void;
  /** Delay before the coalesced extra cycle (0: at once). */
  againDelayMs?: number;
}

export class WakeLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(private readonly opts: WakeLoopOptions) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.unlisten = await this.opts.ldb.listen(this.opts.channel, () => this.wake());
    this.timer = setInterval(() => this.wake(), this.opts.pollMs);
    this.timer.unref?.();
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.opts
      .cycle()
      .catch(this.opts.onError)
      .finally(() => {
        this.running = null;
        if (!this.again || this.stopped) return;
        this.again = false;
        const delay = this.opts.againDelayMs ?? 0;
        if (delay === 0) this.wake();
        else setTimeout(() => this.wake(), delay).unref?.();
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.unlisten?.();
    await this.running;
  }
}
