// A loop woken by NOTIFY on one channel, with a poll as the fallback. Wakes coalesce: a wake that arrives
// while a cycle runs schedules exactly one more cycle after it. With `minGapMs`, cycles start at most once per
// gap: a wake sooner than that is deferred to the end of the gap (one timer, however many wakes arrive), so a
// channel notified by every write costs one cycle per gap under load and no added latency when quiet.
// With `fallback`, the poll's ticks look only when it says so (db/fallback-poll.ts: a process alone on its
// database looks every `aloneMs`; any cycle counts as a look). stop() waits for the cycle in flight.
import type { LedgerDatabase } from '../db/database.js';
import type { FallbackPoll } from '../db/fallback-poll.js';

export interface WakeLoopOptions {
  ldb: Pick<LedgerDatabase, 'listen'>;
  channel: string;
  pollMs: number;
  cycle: () => Promise<void>;
  onError: (e: unknown) => void;
  /** Least time between the starts of two cycles (0: none). */
  minGapMs?: number;
  /**
   * A NOTIFY with this payload, or this payload followed by `;` and a note, does not wake the loop (this
   * process's own, already woken in-process).
   */
  ownPayload?: string;
  /**
   * Called before the wake of a NOTIFY that is not this process's own, and of each poll: how the loop hears
   * of what changed elsewhere (a cancel, a requeue), unlike an in-process `wake()`. `payload`: the
   * NOTIFY's, null for a poll.
   */
  onHeard?: (payload: string | null) => void;
  /** A NOTIFY whose payload this says no to does not wake the loop (work for another lane). */
  wakesFor?: (payload: string) => boolean;
  /** Which poll ticks look (default: every one, each `pollMs`). */
  fallback?: Pick<FallbackPoll, 'due'>;
}

export class WakeLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private lastStart = Number.NEGATIVE_INFINITY;
  private poll: NodeJS.Timeout | null = null;
  private deferred: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(private readonly opts: WakeLoopOptions) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  async start(): Promise<void> {
    this.stopped = false;
    const own = this.opts.ownPayload;
    this.unlisten = await this.opts.ldb.listen(this.opts.channel, (payload) => {
      if (own !== undefined && (payload === own || payload.startsWith(`${own};`))) return;
      if (this.opts.wakesFor && !this.opts.wakesFor(payload)) return;
      this.opts.onHeard?.(payload);
      this.wake();
    });
    this.poll = setInterval(() => {
      if (this.opts.fallback && !this.opts.fallback.due(this.lastStart)) return;
      this.opts.onHeard?.(null);
      this.wake();
    }, this.opts.pollMs);
    this.poll.unref?.();
    this.wake();
  }

  wake(): void {
    if (this.stopped || this.deferred) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.lastStart + (this.opts.minGapMs ?? 0) - performance.now();
    if (wait > 0) {
      this.deferred = setTimeout(() => {
        this.deferred = null;
        this.wake();
      }, wait);
      this.deferred.unref?.();
      return;
    }
    this.lastStart = performance.now();
    this.running = this.opts
      .cycle()
      .catch(this.opts.onError)
      .finally(() => {
        this.running = null;
        if (!this.again || this.stopped) return;
        this.again = false;
        this.wake();
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.deferred) clearTimeout(this.deferred);
    this.deferred = null;
    await this.unlisten?.();
    await this.running;
  }
}
