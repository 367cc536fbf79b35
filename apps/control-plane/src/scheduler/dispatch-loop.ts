// The dispatch loop: claims and starts queued runs in WFQ order as execution slots free (claim-start.ts: one
// statement, FOR UPDATE SKIP LOCKED, per-tenant quotas), and executes them inline. Woken by NOTIFY, with a
// poll fallback. Only the inline lane (kind `analysis`) exists here: command/eval/sandbox runs wait queued for
// a driver — no user command ever runs on the control plane's host.
//
// `concurrency` bounds executions, not settles: a slot frees as soon as its execution returns, and the result
// goes to the SettleBatcher (group commit). Until its settle commits the run stays `running` in the ledger
// and counts in its tenant's `running` counter, so quotas are unaffected. The settle backlog is bounded:
// executing + queued/flushing settles ≤ BACKLOG_FACTOR × concurrency, and past it the loop stops claiming
// until a flush drains it (the batcher wakes the loop).
import { isTerminalStatus, type RunStatus } from '@everdict/run-model';
import { foldReleases } from '../admission-store/sql/released.js';
import { type FallbackPoll, NudgedLooks } from '../db/fallback-poll.js';
import { retryOnConflict } from '../db/tx.js';
import { LeaseKeeper } from '../leases/keeper.js';
import { type LeasePolicy, leasePolicy } from '../leases/policy.js';
import { nextLeaseExpiry, sweepExpiredLeases } from '../leases/sweep.js';
import { findRun } from '../ledger/runs.js';
import { type Deps, DISPATCH_CHANNEL, mayWakeInline, RELEASED_PAYLOAD } from '../services/context.js';
import type { Finished } from './batch-transitions.js';
import { claimAndStart, type StartedRun } from './claim-start.js';
import { executeInline } from './inline-executor.js';
import { nextQueuedExpiry, QueuedExpirySweep } from './queued-expiry.js';
import { type SettleBatch, SettleBatcher } from './settle-batcher.js';
import { WakeLoop } from './wake-loop.js';

export interface DispatchLoopOptions {
  pollMs: number;
  /** Which poll ticks look (db/fallback-poll.ts; default: every one). */
  fallback?: FallbackPoll;
  concurrency: number;
  timeoutMs: number;
  /** How a batch of results is settled (default: settleMany on the database; tests wrap it). */
  settleBatch?: SettleBatch;
  /** The lease rule (leases/): heartbeat, expiry, attempts. Default leasePolicy(). */
  lease?: LeasePolicy;
  /** This replica's name as a lease holder (default: a fresh id). */
  holder?: string;
}

export const INLINE_KINDS = ['analysis'] as const;
/** Executions + unsettled results allowed per execution slot. */
export const BACKLOG_FACTOR = 4;

export class DispatchLoop {
  private readonly executing = new Set<Promise<void>>();
  /** The executions in flight by run id: aborted when their run stops running (a cancel, on any replica). */
  private readonly controllers = new Map<string, AbortController>();
  private readonly settling = new Set<Promise<unknown>>();
  private readonly loop: WakeLoop;
  /** The NOTIFY payload of this loop's own creates (Deps.localDispatch): they wake it in-process instead. */
  readonly wakeToken = `dispatch:${globalThis.crypto.randomUUID()}`;
  private readonly settler: SettleBatcher;
  /** The last cycle stopped claiming because the settle backlog was full. */
  private heldBack = false;
  /**
   * Runs may be waiting for a slot of this loop: its last claim filled its capacity, or a cycle found no slot
   * free. Only then does a freed slot claim at once. Otherwise the last claim took every run it could see,
   * and a run committed since wakes the loop itself (in-process or by NOTIFY) — at low load, claiming on
   * every freed slot was an empty claim per run.
   */
  private mayHaveWaiting = true;
  private wakePending = false;
  /**
   * A NOTIFY (or a poll) arrived since the last check for stopped runs: a cancel is announced so, never by an
   * in-process wake (this process's creates, a freed slot), which then skip that statement.
   */
  private heard = true;
  private lastSweep = 0;
  /**
   * Which sweep ticks look (db/fallback-poll.ts): alone on the database, after a fact was heard (a lease granted,
   * a run settled: `nudgeSweep`), at the earliest lease expiry the last sweep read, else once per `aloneMs`.
   */
  private readonly sweepLooks: NudgedLooks;
  /** A fact was heard since the last fold of released counters (only a settle writes them). */
  private foldPending = true;
  private readonly lease: LeasePolicy;
  /** Queued runs past their expiry, failed on the sweep's tick (queued-expiry.ts). */
  private readonly queuedExpiry: QueuedExpirySweep;
  readonly leases: LeaseKeeper;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** The timer's sweep in flight (stop() waits for it). */
  private sweeping: Promise<void> | null = null;
  dispatched = 0;
  /** Cycles that started nothing because the settle backlog was full (a recorded refusal, for tests). */
  heldBackCycles = 0;

  constructor(
    private readonly deps: Deps,
    private readonly opts: DispatchLoopOptions,
  ) {
    const drained = () => {
      if (this.heldBack) this.wake();
    };
    this.settler = new SettleBatcher(deps, drained, opts.settleBatch);
    this.lease = opts.lease ?? leasePolicy();
    this.sweepLooks = new NudgedLooks(opts.fallback, this.lease.sweepMs);
    this.queuedExpiry = new QueuedExpirySweep(deps);
    this.leases = new LeaseKeeper({
      db: deps.db,
      holder: opts.holder ?? deps.ids('inline'),
      policy: this.lease,
      clock: deps.clock,
      onLost: (runIds) => deps.log('warn', 'inline leases lost: their results will be refused', { runIds }),
      onError: (e) => deps.log('warn', 'lease heartbeat failed', { error: String(e) }),
    });
    this.loop = new WakeLoop({
      ldb: deps.ldb,
      channel: DISPATCH_CHANNEL,
      pollMs: opts.pollMs,
      cycle: () => this.cycle(),
      onError: (e) => deps.log('error', 'dispatch cycle failed', { error: String(e) }),
      ownPayload: this.wakeToken,
      // A release (a settle freed a tenant's capacity) announces no cancel: no check for stopped runs. A
      // release of runners' kinds only is not this lane's work.
      onHeard: (payload) => {
        if (payload === null || !payload.startsWith(RELEASED_PAYLOAD)) this.heard = true;
      },
      wakesFor: mayWakeInline,
      ...(opts.fallback ? { fallback: opts.fallback } : {}),
    });
  }

  async start(): Promise<void> {
    await this.loop.start();
    this.leases.start();
    // The sweep also runs on its own timer, without a claim: with nothing to claim, no cycle would run it. A run
    // it requeues is announced on the dispatch channel, which wakes the loop to claim it.
    this.sweepTimer = setInterval(() => {
      if (this.sweeping || this.loop.isStopped) return;
      this.sweeping = this.sweepIfDue().finally(() => {
        this.sweeping = null;
      });
    }, this.lease.sweepMs);
    this.sweepTimer.unref?.();
  }

  wake(): void {
    this.loop.wake();
  }

  /** How many runs this replica may start now. */
  private capacity(): number {
    const slots = this.opts.concurrency - this.executing.size;
    const backlog = BACKLOG_FACTOR * this.opts.concurrency - this.executing.size - this.settler.backlog;
    this.heldBack = backlog < slots;
    return Math.min(slots, backlog);
  }

  /** Executions in flight in this replica. */
  get executingCount(): number {
    return this.executing.size;
  }

  /**
   * Abort the executions whose run is no longer running (cancelled: the cancel's NOTIFY on the dispatch
   * channel wakes every replica; the poll catches the rest).
   */
  private async abortStopped(): Promise<void> {
    if (this.controllers.size === 0) return;
    const rows = await this.deps.db
      .selectFrom('runs')
      .select(['id', 'status'])
      .where('id', 'in', [...this.controllers.keys()])
      .where('status', '!=', 'running')
      .execute();
    for (const r of rows) this.controllers.get(r.id)?.abort(`run ${r.status}`);
  }

  private async cycle(): Promise<void> {
    if (this.heard) {
      this.heard = false;
      await this.abortStopped().catch((e: unknown) => {
        this.heard = true; // checked again next cycle
        throw e;
      });
    }
    await this.sweepIfDue();
    for (;;) {
      const capacity = this.capacity();
      if (capacity <= 0 || this.loop.isStopped) {
        if (capacity <= 0) this.mayHaveWaiting = true;
        if (capacity <= 0 && this.heldBack) this.heldBackCycles++;
        return;
      }
      const started = await retryOnConflict(() =>
        claimAndStart(this.deps.db, capacity, this.deps.clock(), INLINE_KINDS, {
          holder: this.leases.holder,
          leaseMs: this.lease.leaseMs,
          inProcess: true,
          carry: true,
          ldb: this.deps.ldb,
        }),
      );
      if (started.length < capacity) this.mayHaveWaiting = false;
      if (started.length === 0) return;
      this.dispatched += started.length;
      for (const r of started) {
        this.deps.observe.dispatched(r.waitedMs / 1000, r.class);
        this.leases.track({ runId: r.runId, epoch: r.epoch });
        this.execute(r);
      }
      // A claim short of its capacity took every run it could see (the rest is over quota or held by
      // another claimer): claiming again now would find nothing — that empty claim was every second claim
      // under load. A run committed since wakes the loop (in-process for this process's creates, NOTIFY for
      // the rest), and a wake during this cycle runs one more after it (WakeLoop).
      if (started.length < capacity) return;
    }
  }

  /**
   * At most every `sweepMs` — alone on the database, only as `sweepLooks` says: requeue (or fail) runs whose
   * lease expired (leases/sweep.ts), any holder's; fold released counters past their threshold.
   */
  private async sweepIfDue(): Promise<void> {
    const now = Date.now();
    if (now - this.lastSweep < this.lease.sweepMs) return;
    if (!this.sweepLooks.look(performance.now(), this.deps.clock().getTime())) return;
    this.lastSweep = now;
    await sweepExpiredLeases(this.deps, this.lease, this.deps.clock().getTime()).catch((e: unknown) =>
      this.deps.log('error', 'lease sweep failed', { error: String(e) }),
    );
    await this.queuedExpiry
      .sweep(this.deps.clock().getTime())
      .catch((e: unknown) => this.deps.log('error', 'queued expiry sweep failed', { error: String(e) }));
    // Released counters back into their main rows once a stripe has grown large (released.ts). Alone, only
    // after a fact: no settle of this process's, nothing to fold.
    if (this.foldPending || !this.opts.fallback?.alone()) {
      this.foldPending = false;
      await foldReleases(this.deps.db).catch((e: unknown) => {
        this.foldPending = true;
        this.deps.log('warn', 'released counters: fold failed', { error: String(e) });
      });
    }
    // Alone, a lease can only be granted by this process (a fact, heard: nudgeSweep) and a heartbeat only moves
    // an expiry later: the earliest expiry now is when the next sweep can find one.
    // So is a queued run's expiry: it was created (announced) before this look, and never moves.
    if (this.opts.fallback?.alone()) {
      const nowMs = this.deps.clock().getTime();
      for (const next of await Promise.all([
        nextLeaseExpiry(this.deps).catch(() => Number.NEGATIVE_INFINITY),
        nextQueuedExpiry(this.deps, nowMs, this.opts.fallback.aloneMs).catch(() => Number.NEGATIVE_INFINITY),
      ]))
        if (next !== null) this.sweepLooks.dueBy(next);
    }
  }

  /** A fact was heard (core.ts): the next sweep tick looks, alone or not. */
  nudgeSweep(): void {
    this.foldPending = true;
    this.sweepLooks.nudge();
  }

  /** Sweep ticks that did not look (alone and quiet: a recorded refusal, for tests and figures). */
  get skippedSweeps(): number {
    return this.sweepLooks.skipped;
  }

  private execute({ tenant, runId, epoch, subject, carried, expiresAtMs }: StartedRun): void {
    const cancel = new AbortController();
    this.controllers.set(runId, cancel);
    const run = executeInline(
      this.deps,
      tenant,
      runId,
      subject,
      this.opts.timeoutMs,
      cancel.signal,
      expiresAtMs,
    );
    const slot = run
      // The settle plans from the row the claim wrote (no read back unless it changed since).
      .then((f) => this.handOver(carried ? { ...f, epoch, carried } : { ...f, epoch }))
      .catch((e: unknown) => this.deps.log('error', 'inline execution failed', { error: String(e) }))
      .finally(() => {
        this.controllers.delete(runId);
        this.executing.delete(slot);
        if (this.mayHaveWaiting) this.wakeSoon();
      });
    this.executing.add(slot);
  }

  /**
   * Wake once the executions returning in this tick have all freed their slots: one claim fills them all
   * (waking at the first would claim 1, then the rest). A NOTIFY still wakes at once.
   */
  private wakeSoon(): void {
    if (this.wakePending) return;
    this.wakePending = true;
    setImmediate(() => {
      this.wakePending = false;
      this.wake();
    });
  }

  /** The execution's slot is free from here on; its settle joins the batcher's next flush. */
  private handOver(f: Finished): void {
    const s = this.settler
      .settle(f)
      .catch((e: unknown) =>
        this.deps.log('error', 'inline execution failed to settle', { error: String(e), runId: f.runId }),
      )
      .finally(() => {
        this.settling.delete(s);
        this.leases.untrack(f.runId);
      });
    this.settling.add(s);
  }

  /** Stop claiming; wait for every execution and every pending settle (graceful shutdown). */
  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.loop.stop();
    await this.sweeping;
    await Promise.all([...this.executing]);
    await Promise.all([...this.settling]);
    await this.settler.idle();
    await this.leases.stop();
  }

  /** Test helper: is a run settled in the ledger? */
  async isSettled(tenant: string, runId: string): Promise<boolean> {
    const r = await findRun(this.deps.db, tenant, runId);
    return r !== undefined && isTerminalStatus(r.status as RunStatus);
  }
}
