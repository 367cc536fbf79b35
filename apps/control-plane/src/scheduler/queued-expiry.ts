// Queued runs past their expiry (`ttlSec` → `expiresAt`) fail `expired` when it passes, not when capacity at last
// reaches them. A claim already refuses to start one past its expiry (the inline claim, a runner's grant): that
// stays the guarantee. Without this sweep such a run still read `queued` after its TTL, held its place in the
// tenant's queue (`maxQueued` counts it: a create could be refused 429 for it) and settled — its `run.settled`
// fact, its group's rollup, a trigger on it — only once the tenant's runs ahead of it had drained.
//
// The dispatch loop's sweep (dispatch-loop.ts) calls it on its tick, after the lease sweep. Its scan reads the
// `runs_expiring` index (migration 0013: `expires_at` where set, no status predicate, so a run's status updates
// stay HOT) over the expiries since the previous scan — less EXPIRY_LOOKBACK_MS, for a create whose commit lagged
// its `expires_at` or a run requeued after it — and the first scan of a process over the tenants' queues
// instead (a restart misses nothing that expired while it was down). Each run is failed in a transaction of its
// own, re-checked under its row lock: still queued, still past its expiry — a run a claim started since is the
// claim's (its start check, or the runner's expiry, ends it).
import { sql } from 'kysely';
import { withTx } from '../db/tx.js';
import { lockRun } from '../ledger/runs.js';
import type { Deps } from '../services/context.js';
import { transitionTx } from '../services/transition.js';

/** How far before the previous scan's time a scan looks again. */
export const EXPIRY_LOOKBACK_MS = 60_000;

/** A queued run the scan found past its expiry (read without locks: acted on re-checked). */
export interface ExpiredQueued {
  id: string;
  tenant_id: string;
  expires_at: Date;
}

/**
 * Up to `limit` queued runs whose expiry passed by `nowMs`, soonest expired first: with `sinceMs`, those that
 * expired after it (the index's range); without, every queued run's (the first scan: the queues, joined).
 */
export async function scanExpiredQueued(
  deps: Pick<Deps, 'db'>,
  nowMs: number,
  sinceMs: number | null,
  limit = 100,
): Promise<ExpiredQueued[]> {
  const now = new Date(nowMs);
  const q =
    sinceMs === null
      ? sql<ExpiredQueued>`SELECT r.id, r.tenant_id, r.expires_at FROM adm_queue q
          JOIN runs r ON r.id = q.run_id AND r.tenant_id = q.tenant
          WHERE r.expires_at <= ${now} AND r.status = 'queued'
          ORDER BY r.expires_at LIMIT ${limit}::int`
      : sql<ExpiredQueued>`SELECT id, tenant_id, expires_at FROM runs
          WHERE expires_at IS NOT NULL AND expires_at > ${new Date(sinceMs)} AND expires_at <= ${now}
            AND status = 'queued'
          ORDER BY expires_at LIMIT ${limit}::int`;
  return (await q.execute(deps.db)).rows;
}

/**
 * The earliest expiry of a queued run after `nowMs` and within `horizonMs` of it (epoch ms), or null: when the next
 * scan can find one. The horizon bounds the index range read (runs with a TTL that have settled stay in it until
 * their expiry): a caller whose fallback look comes sooner than the horizon gains nothing from a later deadline.
 */
export async function nextQueuedExpiry(
  deps: Pick<Deps, 'db'>,
  nowMs: number,
  horizonMs = 3_600_000,
): Promise<number | null> {
  const { rows } = await sql<{ expires_at: Date }>`SELECT expires_at FROM runs
    WHERE expires_at IS NOT NULL AND expires_at > ${new Date(nowMs)}
      AND expires_at <= ${new Date(nowMs + horizonMs)} AND status = 'queued'
    ORDER BY expires_at LIMIT 1`.execute(deps.db);
  return rows[0] ? new Date(rows[0].expires_at).getTime() : null;
}

/**
 * Fails each scanned run `expired` (no interval — nothing ran —, its record closed, its queue entry and slot
 * released by the settle), each re-checked under its row lock; answers the ids it failed.
 */
export async function failExpiredQueued(
  deps: Deps,
  rows: readonly ExpiredQueued[],
  nowMs: number,
): Promise<string[]> {
  const failed: string[] = [];
  for (const r of rows) {
    const done = await withTx(deps.db, async (tx) => {
      const row = await lockRun(tx, r.tenant_id, r.id);
      if (row?.status !== 'queued' || row.expires_at === null) return false;
      const expiresAt = new Date(row.expires_at);
      if (expiresAt.getTime() > nowMs) return false;
      const message = `its TTL ran out while it was queued (expiresAt ${expiresAt.toISOString()})`;
      await transitionTx(
        tx,
        deps,
        r.tenant_id,
        r.id,
        { type: 'fail', error: { code: 'expired', message, retryable: false } },
        { locked: row, outputs: { summary: message }, nothingRan: true },
      );
      return true;
    }).catch((e: unknown) => {
      deps.log('warn', 'queued expiry: a run could not be failed', { runId: r.id, error: String(e) });
      return false;
    });
    if (done) failed.push(r.id);
  }
  return failed;
}

/** The sweep's state across ticks: where the last scan reached. */
export class QueuedExpirySweep {
  private scannedTo: number | null = null;

  constructor(private readonly deps: Deps) {}

  /** Fails the queued runs past their expiry by `nowMs` (in batches of `limit`); answers their ids. */
  async sweep(nowMs: number, limit = 100): Promise<string[]> {
    const since = this.scannedTo === null ? null : this.scannedTo - EXPIRY_LOOKBACK_MS;
    const failed: string[] = [];
    for (;;) {
      const rows = await scanExpiredQueued(this.deps, nowMs, since, limit);
      failed.push(...(await failExpiredQueued(this.deps, rows, nowMs)));
      // A full batch may have more behind it; one whose runs could not all be failed is left to the next tick.
      if (rows.length < limit || rows.some((r) => !failed.includes(r.id))) break;
    }
    this.scannedTo = nowMs;
    return failed;
  }
}
