// The dispatch loop: claims queued runs in WFQ order as capacity frees (FOR UPDATE SKIP LOCKED, per-tenant
// quotas), starts them all in the same transaction (batch-transitions.startMany), and hands them to the
// inline executor, whose results are settled in batches (SettleBatcher). Woken by NOTIFY,
// with a poll fallback. Only the inline lane (kind `analysis`) exists here: command/eval/sandbox runs wait
// queued for a driver — no user command ever runs on the control plane's host.
import { TERMINAL_STATUSES } from '@everdict/run-model';
import { PgAdmissionLanes } from '../admission-store/lanes.js';
import { withTx } from '../db/tx.js';
import { findRun } from '../ledger/runs.js';
import { type Deps, DISPATCH_CHANNEL } from '../services/context.js';
import { startMany } from './batch-transitions.js';
import { executeInline } from './inline-executor.js';
import { SettleBatcher } from './settle-batcher.js';
import { WakeLoop } from './wake-loop.js';

export interface DispatchLoopOptions {
  pollMs: number;
  concurrency: number;
  timeoutMs: number;
  /** Extra work each wake (subscriptions consumer, schedule ticker). */
  onTick?: () => Promise<unknown>;
}

export const INLINE_KINDS = ['analysis'] as const;

export class DispatchLoop {
  private active = new Set<Promise<void>>();
  private readonly loop: WakeLoop;
  dispatched = 0;
  private readonly settler: SettleBatcher;

  constructor(
    private readonly deps: Deps,
    private readonly opts: DispatchLoopOptions,
  ) {
    this.settler = new SettleBatcher(deps);
    this.loop = new WakeLoop({
      ldb: deps.ldb,
      channel: DISPATCH_CHANNEL,
      pollMs: opts.pollMs,
      cycle: () => this.cycle(),
      onError: (e) => deps.log('error', 'dispatch cycle failed', { error: String(e) }),
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  private async cycle(): Promise<void> {
    if (this.opts.onTick) await this.opts.onTick();
    for (;;) {
      const capacity = this.opts.concurrency - this.active.size;
      if (capacity <= 0 || this.loop.isStopped) return;
      const now = this.deps.clock();
      const started = await withTx(this.deps.db, async (tx) => {
        const claims = await new PgAdmissionLanes(tx).claimKinds(capacity, now.getTime(), INLINE_KINDS);
        const rows = await startMany(tx, this.deps, claims);
        return { claims, rows };
      });
      if (started.rows.length === 0) return;
      this.dispatched += started.rows.length;
      for (const c of started.claims) this.deps.observe.dispatched(c.waitedMs / 1000, c.class);
      for (const r of started.rows)
        this.track(
          executeInline(this.deps, r.tenant_id, r.id, r.subject, this.opts.timeoutMs).then((f) =>
            this.settler.settle(f),
          ),
        );
    }
  }

  private track(p: Promise<void>): void {
    const t = p
      .catch((e: unknown) =>
        this.deps.log('error', 'inline execution failed to settle', { error: String(e) }),
      )
      .finally(() => {
        this.active.delete(t);
        this.wake();
      });
    this.active.add(t);
  }

  /** Stop claiming; wait for executing runs to settle (graceful shutdown). */
  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.all([...this.active]);
  }

  /** Test helper: is a run still executing here? */
  async isSettled(tenant: string, runId: string): Promise<boolean> {
    const r = await findRun(this.deps.db, tenant, runId);
    return r !== undefined && TERMINAL_STATUSES.some((s) => s === r.status);
  }
}
