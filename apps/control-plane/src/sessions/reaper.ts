// The durable, replica-safe reaper: deadlines live on session rows, so any replica may sweep. Each sweep
// lists due rows (expired, idle past their deadline, or whose run a cancel already settled), and settles
// each in its own transaction with the row taken FOR UPDATE SKIP LOCKED and the deadline re-checked under
// the lock — a session is disposed and settled exactly once, by whichever replica got it.
// On start, orphans are found by label: the driver's `reap` removes every session sandbox whose owning
// process is dead (workspace, cgroups, label file) — with or without a row — and each such sandbox's open
// row is settled lost (failed executor_lost, record closed(abandoned)).
import { isTerminalStatus, type RunStatus, sessionDue } from '@everdict/run-model';
import { sql } from 'kysely';
import { SESSION_KIND } from './compute.js';
import type { SessionCore } from './service.js';
import { type SessionEnd, settleSession } from './settle.js';

export interface ReaperOptions {
  /** How often a replica sweeps (default 1000 ms). */
  readonly sweepMs?: number;
  /** Rows looked at per sweep (default 100). */
  readonly batch?: number;
  readonly onError?: (e: unknown) => void;
}

export class SessionReaper {
  #timer: ReturnType<typeof setTimeout> | null = null;
  #running: Promise<unknown> | null = null;
  #stopped = false;

  constructor(
    private readonly core: SessionCore,
    private readonly opts: ReaperOptions = {},
  ) {}

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

  /** Start-up: what a dead process left behind, removed by label and its rows settled lost. */
  async recoverOrphans(): Promise<{ removed: number; settled: string[] }> {
    const { compute } = this.core;
    const reaped = await compute.driver.reap({ labels: { kind: SESSION_KIND } });
    const settled: string[] = [];
    for (const r of reaped) {
      const { tenant, runId } = r.labels;
      const done = await settleSession(this.core, tenant, runId, 'lost', {
        skipLocked: true,
        decide: (s, status) =>
          isTerminalStatus(status as RunStatus) ? 'cancelled' : s.state === 'open' ? 'lost' : null,
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
      this.#running = this.sweep()
        .catch((e: unknown) => this.opts.onError?.(e))
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
