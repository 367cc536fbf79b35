// The durable, replica-safe reaper: deadlines live on session rows, so any replica may sweep. Each sweep
// lists due rows (expired, idle past their deadline, or whose run a cancel already settled), and settles
// each in its own transaction with the row taken FOR UPDATE SKIP LOCKED and the deadline re-checked under
// the lock — a session is disposed and settled exactly once, by whichever replica got it.
// On start, orphans are found by label: the driver's `reap` removes every session sandbox whose owning
// process is dead (workspace, cgroups, label file) — with or without a row — and each such sandbox's open
// row is settled lost (failed executor_lost, record closed(abandoned)).
// Runner-held sessions: a runner whose session channel has not been seen for the lease (`runnerLeaseMs`) is
// gone — each sweep settles the sessions it held open lost; and each time a runner's channel (re)connects, its
// driver's `reap` removes what a previous runner process left (recoverRunner), those rows settled lost too.
// Alone on its database (db/fallback-poll.ts) a replica sweeps when a fact was heard (a session opened, resumed or
// its run cancelled: `nudge`), at the earliest deadline the last sweep read, and otherwise once per `aloneMs` —
// every tick while a runner holds a session open (its channel's liveness is the deadline there).
import type { Driver, ReapedSandbox } from '@everdict/placement';
import { isTerminalStatus, type RunStatus, sessionDue } from '@everdict/run-model';
import { sql } from 'kysely';
import { type FallbackPoll, NudgedLooks } from '../db/fallback-poll.js';
import type { Executor } from '../db/tx.js';
import { runnerHolder, runnerOfHolder } from '../runners/sessions/hub.js';
import { SESSION_KIND } from './compute.js';
import type { SessionCore } from './service.js';
import { type SessionEnd, settleSession } from './settle.js';

export interface ReaperOptions {
  /** How often a replica sweeps (default 1000 ms). */
  readonly sweepMs?: number;
  /** Rows looked at per sweep (default 100). */
  readonly batch?: number;
  readonly onError?: (e: unknown) => void;
  /** A runner whose session channel was not seen for this long has lost its open sessions (default 10 s). */
  readonly runnerLeaseMs?: number;
  /** Which ticks sweep (db/fallback-poll.ts; default: every one). */
  readonly fallback?: Pick<FallbackPoll, 'alone' | 'aloneMs'>;
}

export class SessionReaper {
  #timer: ReturnType<typeof setTimeout> | null = null;
  #running: Promise<unknown> | null = null;
  #stopped = false;
  readonly #looks: NudgedLooks;

  constructor(
    private readonly core: SessionCore,
    private readonly opts: ReaperOptions = {},
  ) {
    this.#looks = new NudgedLooks(opts.fallback, opts.sweepMs ?? 1000);
  }

  /** A fact was heard (core.ts): the next tick sweeps, alone or not. */
  nudge(): void {
    this.#looks.nudge();
  }

  /** Ticks that did not sweep (alone and quiet: a recorded refusal, for tests and figures). */
  get skippedSweeps(): number {
    return this.#looks.skipped;
  }

  /**
   * Alone: when the next sweep can find something — the earliest of the deadlines `sweep` compares with now (any
   * session's expiry, an open one's idle deadline; each read off its index). A runner holding a session open
   * keeps every tick sweeping.
   */
  async #planNext(): Promise<void> {
    const { rows } = await sql<{ next: number | null; on_runners: boolean }>`
      SELECT (extract(epoch FROM LEAST((SELECT min(expires_at) FROM sessions),
          (SELECT min(idle_deadline) FROM sessions WHERE state = 'open'))) * 1000)::float8 AS next,
        EXISTS (SELECT 1 FROM sessions WHERE state = 'open' AND holder LIKE 'runner:%') AS on_runners`.execute(
      this.core.deps.db,
    );
    const r = rows[0];
    if (r?.on_runners) this.#looks.nudge();
    else if (r?.next != null) this.#looks.dueBy(r.next);
  }

  /** Due now, re-decided under the row lock. */
  #decide = (
    s: { expires_at: Date; idle_deadline: Date; state: string },
    status: string,
  ): SessionEnd | null => {
    if (isTerminalStatus(status as RunStatus)) return 'cancelled';
    const now = this.core.deps.clock().toISOString();
    return sessionDue(
      { expiresAt: s.expires_at.toISOString(), idleDeadline: s.idle_deadline.toISOString() },
      now,
      s.state === 'parked',
    );
  };

  /** One sweep: settles every due session this replica gets; returns their run ids. */
  async sweep(): Promise<string[]> {
    const { deps } = this.core;
    const now = deps.clock();
    const { rows } = await sql<{ tenant_id: string; run_id: string }>`
      SELECT s.tenant_id, s.run_id FROM sessions s JOIN runs r ON r.id = s.run_id AND r.tenant_id = s.tenant_id
      WHERE s.expires_at <= ${now} OR (s.state = 'open' AND s.idle_deadline <= ${now})
        OR r.status IN ('succeeded', 'failed', 'cancelled')
      ORDER BY LEAST(s.expires_at, s.idle_deadline) LIMIT ${this.opts.batch ?? 100}::int`.execute(deps.db);
    const settled: string[] = [];
    if (this.core.runners) settled.push(...(await this.#sweepLostRunners()));
    for (const r of rows) {
      const done = await settleSession(this.core, r.tenant_id, r.run_id, 'expired', {
        skipLocked: true,
        decide: this.#decide,
      }).catch((e: unknown) => {
        this.opts.onError?.(e);
        return false;
      });
      if (done) settled.push(r.run_id);
    }
    return settled;
  }

  /** Open sessions of runners not seen within the lease, settled lost (re-checked under the row lock). */
  async #sweepLostRunners(): Promise<string[]> {
    const { deps } = this.core;
    const since = new Date(deps.clock().getTime() - (this.opts.runnerLeaseMs ?? 10_000));
    const stale = (holder: string) => sql<boolean>`NOT EXISTS (SELECT 1 FROM session_channels c
        WHERE 'runner:' || c.runner_id = ${holder} AND c.seen_at > ${since})`;
    const { rows } = await sql<{ tenant_id: string; run_id: string }>`
      SELECT s.tenant_id, s.run_id FROM sessions s
      WHERE s.state = 'open' AND s.holder LIKE 'runner:%' AND NOT EXISTS (SELECT 1 FROM session_channels c
        WHERE 'runner:' || c.runner_id = s.holder AND c.seen_at > ${since})
      LIMIT ${this.opts.batch ?? 100}::int`.execute(deps.db);
    const settled: string[] = [];
    for (const r of rows) {
      const done = await settleSession(this.core, r.tenant_id, r.run_id, 'lost', {
        skipLocked: true,
        decide: async (s, status, tx: Executor) => {
          if (isTerminalStatus(status as RunStatus)) return 'cancelled';
          if (s.state !== 'open') return null;
          // This replica sees the runner's channel open: not lost, whatever a delayed seen_at says.
          const runnerId = runnerOfHolder(s.holder);
          if (runnerId !== null && this.core.runners?.connected(runnerId)) return null;
          const { rows: gone } = await sql<{ gone: boolean }>`SELECT ${stale(s.holder)} AS gone`.execute(tx);
          return gone[0]?.gone ? 'lost' : null;
        },
      }).catch((e: unknown) => {
        this.opts.onError?.(e);
        return false;
      });
      if (done) settled.push(r.run_id);
    }
    return settled;
  }

  /** Start-up: what a dead process left behind, removed by label and its rows settled lost. */
  async recoverOrphans(): Promise<{ removed: number; settled: string[] }> {
    const { compute } = this.core;
    if (!compute) return { removed: 0, settled: [] };
    return this.#settleReaped(compute.holder, compute.driver);
  }

  /** A runner's channel (re)connected: what a previous process of it left, reaped by label; rows settled lost. */
  async recoverRunner(runnerId: string): Promise<{ removed: number; settled: string[] }> {
    const { runners } = this.core;
    if (!runners) return { removed: 0, settled: [] };
    return this.#settleReaped(runnerHolder(runnerId), runners.driver(runnerId));
  }

  async #settleReaped(holder: string, driver: Driver): Promise<{ removed: number; settled: string[] }> {
    const reaped: ReapedSandbox[] = await driver.reap({ labels: { kind: SESSION_KIND } });
    const settled: string[] = [];
    for (const r of reaped) {
      const { tenant, runId } = r.labels;
      const done = await settleSession(this.core, tenant, runId, 'lost', {
        skipLocked: true,
        // An orphan of this holder: its row is lost only if this holder still holds it open (a session
        // resumed elsewhere since is not).
        decide: (s, status) =>
          isTerminalStatus(status as RunStatus)
            ? 'cancelled'
            : s.state === 'open' && s.holder === holder
              ? 'lost'
              : null,
      }).catch((e: unknown) => {
        this.opts.onError?.(e);
        return false;
      });
      if (done) settled.push(runId);
    }
    return { removed: reaped.length, settled };
  }

  start(): void {
    this.#stopped = false;
    const every = this.opts.sweepMs ?? 1000;
    const tick = () => {
      if (this.#stopped) return;
      const looks = this.#looks.look(performance.now(), this.core.deps.clock().getTime());
      const alone = this.opts.fallback?.alone() === true;
      this.#running = (
        looks ? this.sweep().then(() => (alone ? this.#planNext() : undefined)) : Promise.resolve()
      )
        .catch((e: unknown) => {
          if (alone) this.#looks.nudge(); // the next tick sweeps again
          this.opts.onError?.(e);
        })
        .finally(() => {
          this.#running = null;
          if (!this.#stopped) this.#timer = setTimeout(tick, every);
        });
    };
    this.#timer = setTimeout(tick, every);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
