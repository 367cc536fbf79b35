// A holder's heartbeat in-process (the inline executor): every heartbeatMs, one `renew` of every lease
// it holds; leases reported lost are dropped and handed to `onLost` (the executions should stop: their
// results would be refused). Out-of-process holders (runners) renew over HTTP with the same `renew`.
import { type Db, retryOnConflict } from '../db/tx.js';
import type { LeasePolicy } from './policy.js';
import { type HeldLease, renew } from './store.js';

export interface LeaseKeeperOptions {
  db: Db;
  holder: string;
  policy: Pick<LeasePolicy, 'leaseMs' | 'heartbeatMs'>;
  clock: () => Date;
  onLost?: (runIds: string[]) => void;
  onError?: (e: unknown) => void;
}

export class LeaseKeeper {
  private readonly held = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private beating: Promise<void> | undefined;

  constructor(private readonly o: LeaseKeeperOptions) {}

  get holder(): string {
    return this.o.holder;
  }

  /** Leases currently held (run id → epoch). */
  get size(): number {
    return this.held.size;
  }

  track(lease: HeldLease): void {
    this.held.set(lease.runId, lease.epoch);
  }

  untrack(runId: string): void {
    this.held.delete(runId);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.o.policy.heartbeatMs);
    this.timer.unref?.();
  }

  /** One heartbeat now (at most one in flight). */
  beat(): Promise<void> {
    this.beating ??= this.renewAll().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  private async renewAll(): Promise<void> {
    const held = [...this.held].map(([runId, epoch]) => ({ runId, epoch }));
    if (held.length === 0) return;
    try {
      // A deadlock with a settle locking the same leases rolls the renewal back whole: run it again.
      const { lost } = await retryOnConflict(() =>
        renew(this.o.db, this.o.holder, held, this.o.clock().getTime(), this.o.policy.leaseMs),
      );
      // Only those still held at the epoch we offered (a new lease may have been tracked meanwhile).
      const gone = lost.filter((id) => held.some((h) => h.runId === id && this.held.get(id) === h.epoch));
      for (const id of gone) this.held.delete(id);
      if (gone.length > 0) this.o.onLost?.(gone);
    } catch (e) {
      this.o.onError?.(e);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
  }
}
