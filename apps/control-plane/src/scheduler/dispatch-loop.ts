// The dispatch loop: claims queued runs in WFQ order as capacity frees (FOR UPDATE SKIP LOCKED, per-tenant
// quotas), starts them in the same transaction, and hands them to the inline executor. Woken by NOTIFY,
// with a poll fallback. Only the inline lane (kind `analysis`) exists here: command/eval/sandbox runs wait
// queued for a driver — no user command ever runs on the control plane's host.
import { globalPolicy } from '@everdict/admission';
import { PgAdmissionLanes } from '../admission-store/lanes.js';
import { withTx } from '../db/tx.js';
import { findRun } from '../ledger/runs.js';
import { type Deps, DISPATCH_CHANNEL } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { executeInline } from './inline-executor.js';

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
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  dispatched = 0;

  constructor(
    private readonly deps: Deps,
    private readonly opts: DispatchLoopOptions,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.unlisten = await this.deps.ldb.listen(DISPATCH_CHANNEL, () => this.wake());
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
    this.running = this.cycle()
      .catch((e: unknown) => this.deps.log('error', 'dispatch cycle failed', { error: String(e) }))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async cycle(): Promise<void> {
    if (this.opts.onTick) await this.opts.onTick();
    for (;;) {
      const capacity = this.opts.concurrency - this.active.size;
      if (capacity <= 0 || this.stopped) return;
      const now = this.deps.clock();
      const started = await withTx(this.deps.db, async (tx) => {
        const claims = await new PgAdmissionLanes(tx).claimKinds(
          capacity,
          now.getTime(),
          globalPolicy().agingMs,
          INLINE_KINDS,
        );
        const out: { tenant: string; runId: string; subject: unknown }[] = [];
        for (const c of claims) {
          const { row } = await transitionTx(tx, this.deps, c.tenant, c.runId, { type: 'start' });
          out.push({ tenant: c.tenant, runId: c.runId, subject: row.subject });
        }
        return out;
      });
      if (started.length === 0) return;
      this.dispatched += started.length;
      for (const s of started)
        this.track(executeInline(this.deps, s.tenant, s.runId, s.subject, this.opts.timeoutMs));
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
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.unlisten?.();
    await this.running;
    await Promise.all([...this.active]);
  }

  /** Test helper: is a run still executing here? */
  async isSettled(tenant: string, runId: string): Promise<boolean> {
    const r = await findRun(this.deps.db, tenant, runId);
    return r !== undefined && ['succeeded', 'failed', 'cancelled'].includes(r.status);
  }
}
