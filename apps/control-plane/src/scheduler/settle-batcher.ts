// Group commit for settles: finished runs queue here; one flush settles all of them in ONE transaction
// (batch-transitions.settleMany). While a flush commits, the next batch gathers — no timer, no added latency
// when idle (a lone run is flushed at once).
import { withTx } from '../db/tx.js';
import type { Deps } from '../services/context.js';
import { type Finished, settleMany } from './batch-transitions.js';

interface Pending {
  item: Finished;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class SettleBatcher {
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly deps: Deps,
    private readonly maxBatch = 64,
  ) {}

  settle(item: Finished): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = null;
      if (this.pending.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      try {
        await withTx(this.deps.db, (tx) =>
          settleMany(
            tx,
            this.deps,
            batch.map((b) => b.item),
          ),
        );
        for (const b of batch) b.resolve();
      } catch (e) {
        for (const b of batch) b.reject(e);
      }
    }
  }
}
