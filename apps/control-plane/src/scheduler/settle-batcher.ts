// Group commit for settles: finished runs queue here; one flush settles all of them at once
// (batch-transitions.settleMany: two statements, whatever the batch; one for the inline lane's carried runs).
// While a flush runs, the next batch gathers — no timer, no added latency when idle (a lone run is flushed at once).
//
// The dispatch loop frees an execution slot as soon as the execution returns and hands the result here, so
// `backlog` (queued + flushing) is what it must bound; `onDrained` tells it when a flush shrank the backlog.
// `idle()` resolves once every settle handed in so far has committed (or failed): graceful shutdown.
// Each `settle(item)` answers what became of its item: settled, dropped (its run no longer running at its
// epoch: terminal is terminal), or refused with the status machine's code (batch-transitions.SettleRefusal,
// logged there) — never "settled" for a result that was not applied.

import { retryOnConflict } from '../db/tx.js';
import type { Deps } from '../services/context.js';
import { type Finished, type SettleOutcome, type SettleRefusal, settleOutcome } from './batch-transitions.js';

/** Settles one batch (settleOutcome on the database; a test may wrap it to hold settles back). */
export type SettleBatch = (deps: Deps, items: readonly Finished[]) => Promise<SettleOutcome>;

const settleOnDb: SettleBatch = (deps, items) => settleOutcome(deps.db, deps, items);

/** What became of one item handed to `settle`. */
export type ItemSettled =
  | { outcome: 'settled' }
  /**
   * Its run was no longer running at its epoch (cancelled, requeued, settled): the result is dropped. Also a
   * run whose row kept changing under every re-read (batch-transitions logs it).
   */
  | { outcome: 'dropped' }
  | ({ outcome: 'refused' } & SettleRefusal);

/** Each item's answer from its batch's outcome, by run id. */
function itemOutcomes(out: SettleOutcome): (runId: string) => ItemSettled {
  const settled = new Set(out.settled);
  const refused = new Map(out.refused.map((r) => [r.runId, r]));
  return (runId) => {
    if (settled.has(runId)) return { outcome: 'settled' };
    const r = refused.get(runId);
    return r ? { outcome: 'refused', ...r } : { outcome: 'dropped' };
  };
}

interface Pending {
  item: Finished;
  resolve: (settled: ItemSettled) => void;
  reject: (e: unknown) => void;
}

export class SettleBatcher {
  private pending: Pending[] = [];
  private inFlight = 0;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly deps: Deps,
    private readonly onDrained: () => void = () => undefined,
    private readonly settleBatch: SettleBatch = settleOnDb,
    private readonly maxBatch = 64,
  ) {}

  /** Settles queued or being flushed. */
  get backlog(): number {
    return this.pending.length + this.inFlight;
  }

  settle(item: Finished): Promise<ItemSettled> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.kick();
    });
  }

  /** Resolves when nothing is queued or flushing. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
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
      this.inFlight = batch.length;
      try {
        // A deadlock or serialization failure rolls the statement back whole: safe to run again.
        const items = batch.map((b) => b.item);
        const answer = itemOutcomes(await retryOnConflict(() => this.settleBatch(this.deps, items)));
        for (const b of batch) b.resolve(answer(b.item.runId));
      } catch (e) {
        for (const b of batch) b.reject(e);
      } finally {
        this.inFlight = 0;
        this.onDrained();
      }
    }
  }
}
