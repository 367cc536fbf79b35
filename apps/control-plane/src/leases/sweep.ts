// The expiry sweep: leases not renewed for leaseMs are lost. Each lost run still running at the lost
// epoch is requeued (run-model's `requeue`, cause executor_lost: running → queued, no record segment —
// nothing attested ran) while it has attempts left, else failed `executor_lost` through the ordinary
// settle path. The attempts rule counts LOST executions (`runs.lost_attempts`, migration 0030, which the
// requeue increments), never starts: `runs.attempt` — the lease epoch — is bumped by every start, every
// resume of a parked turn included, so a run that parked and resumed any number of times still gets
// maxAttempts lost executions, the last of which fails it. A lease of a parked agent turn (leased where it
// lies, `awaiting_input`, for its resume) that expired with the turn still parked at that epoch is a lost
// execution too (its holder died before its `resumed` report): `lost_attempts` is counted and the turn stays
// parked, ready for the next holder; the maxAttempts-th such loss fails it `executor_lost` — a turn that
// crashes every host at resume is not leased for ever. Leftover leases (the run settled or cancelled
// meanwhile) are dropped. Replicas may sweep at once: every write is conditional on the run row locked at
// the lost epoch, so each run moves once.
// The scan reads without locks, so its answer is stale by the time a run is acted on: both the requeue and
// the fail re-check, under the run's row lock and then the lease's, that the lease is still expired at that
// epoch. A heartbeat that extended it between the scan and the lock wins: that run is left alone.
import { nextStatus, REQUEUE_CAUSE } from '@everdict/run-model';
import { sql } from 'kysely';
import { announceTurnReady } from '../agents/turn-waiters.js';
import { numeric } from '../db/numeric.js';
import { retryOnConflict, withTx } from '../db/tx.js';
import { EVENTS_CHANNEL } from '../ledger/events.js';
import { type Finished, settleMany } from '../scheduler/batch-transitions.js';
import { type Deps, DISPATCH_CHANNEL } from '../services/context.js';
import { transitionTx } from '../services/transition.js';
import type { LeasePolicy } from './policy.js';
import { requeueCtes } from './requeue-order.js';

export const LOST_CODE = 'executor_lost';

export interface SweepResult {
  requeued: string[];
  failed: string[];
  /** Leases dropped because their run was no longer running at their epoch. */
  dropped: number;
  /** Parked agent turns whose resume lease was lost: counted, still parked and ready (failed ones: `failed`). */
  parked: string[];
}

/** A lease the scan found expired, with its run as the scan read it (no locks: act on it re-checked). */
export interface Expired {
  run_id: string;
  tenant: string;
  epoch: string | number;
  status: string;
  /** The run's attempt: the epoch of its current lease (every start counts one). */
  attempt: number;
  /** Executions of the run lost before this one (each requeued by the sweep, or a parked turn's lost resume). */
  lost_attempts: number;
  lifetime: string;
}

/** This lost execution is the run's last allowed one: `lost_attempts` before it + 1 reaches maxAttempts. */
function isLastAttempt(r: Pick<Expired, 'lost_attempts'>, policy: Pick<LeasePolicy, 'maxAttempts'>): boolean {
  return r.lost_attempts + 1 >= policy.maxAttempts;
}

type Fragment = ReturnType<typeof sql>;

/**
 * The re-check under lock every write of the sweep makes, as three CTEs (comma-separated, none after):
 * `want` (the scanned runs and epochs), `lr` (those runs still `status` at that epoch, and `also`, locked in
 * id order, SKIP LOCKED: a run another replica or a result holds is left to it; columns id, tenant_id, kind,
 * attempt, lost_attempts, lifetime) and `ll` (their leases still at that epoch and still expired before
 * `nowMs`, locked: a heartbeat committed since the scan extended it, and the run is left alone).
 */
function lockedExpired(
  rows: readonly Expired[],
  status: string,
  nowMs: number,
  also: Fragment = sql``,
): Fragment {
  return sql`want AS (
      SELECT * FROM unnest(${rows.map((r) => r.run_id)}::text[], ${rows.map((r) => r.attempt)}::int[]) AS w(run_id, epoch)
    ),
    lr AS MATERIALIZED (
      SELECT r.id, r.tenant_id, r.kind, r.attempt, r.lost_attempts, r.lifetime FROM runs r JOIN want w ON w.run_id = r.id
      WHERE r.status = ${status} AND r.attempt = w.epoch ${also}
      ORDER BY r.id
      FOR UPDATE OF r SKIP LOCKED
    ),
    ll AS MATERIALIZED (
      SELECT l.run_id FROM run_leases l JOIN lr ON lr.id = l.run_id
      WHERE l.epoch = lr.attempt AND l.expires_at_ms < ${nowMs}::bigint
      ORDER BY l.run_id
      FOR UPDATE OF l
    )`;
}

/** Requeue or fail up to `limit` runs whose lease expired before `nowMs`. */
export async function sweepExpiredLeases(
  deps: Deps,
  policy: Pick<LeasePolicy, 'maxAttempts'>,
  nowMs: number,
  limit = 200,
): Promise<SweepResult> {
  return settleExpired(deps, policy, await scanExpiredLeases(deps, nowMs, limit), nowMs);
}

/** Up to `limit` leases expired before `nowMs`, oldest first, read without locks. */
export async function scanExpiredLeases(deps: Deps, nowMs: number, limit = 200): Promise<Expired[]> {
  const { rows } = await sql<Expired>`
    SELECT l.run_id, l.tenant, l.epoch, r.status, r.attempt, r.lost_attempts, r.lifetime FROM run_leases l
    JOIN runs r ON r.id = l.run_id
    WHERE l.expires_at_ms < ${nowMs}::bigint
    ORDER BY l.expires_at_ms
    LIMIT ${limit}::int`.execute(deps.db);
  return rows;
}

/** The earliest lease expiry (epoch ms, the leases' clock), or null when no lease is held. */
export async function nextLeaseExpiry(deps: Deps): Promise<number | null> {
  const { rows } = await sql<{ next: number | null }>`
    SELECT min(expires_at_ms)::float8 AS next FROM run_leases`.execute(deps.db);
  return rows[0]?.next ?? null;
}

/**
 * Acts on a scan's answer (`rows`, possibly stale): drops leftover leases, requeues runs with attempts left,
 * fails the others — each write re-checked under the run's lock, so a run renewed or moved since is left alone.
 * This loss is the run's `lost_attempts + 1`-th: the maxAttempts-th fails it (a session run: the first).
 * `lost_attempts` read by the scan is current when the run is still running at the scanned epoch: only a
 * requeue (which leaves that epoch behind) changes it.
 */
export async function settleExpired(
  deps: Deps,
  policy: Pick<LeasePolicy, 'maxAttempts'>,
  rows: readonly Expired[],
  nowMs: number,
): Promise<SweepResult> {
  const out: SweepResult = { requeued: [], failed: [], dropped: 0, parked: [] };
  if (rows.length === 0) return out;
  const live = rows.filter((r) => r.status === 'running' && r.attempt === numeric(r.epoch));
  const parked = rows.filter((r) => r.status === 'awaiting_input' && r.attempt === numeric(r.epoch));
  const stale = rows.filter((r) => !live.includes(r) && !parked.includes(r));
  const exhausted = live.filter((r) => isLastAttempt(r, policy) || r.lifetime === 'session');
  const again = live.filter((r) => !exhausted.includes(r));

  if (stale.length > 0) {
    const r = await sql`DELETE FROM run_leases l
      USING unnest(${stale.map((x) => x.run_id)}::text[], ${stale.map((x) => numeric(x.epoch))}::bigint[]) AS s(run_id, epoch)
      WHERE l.run_id = s.run_id AND l.epoch = s.epoch AND l.expires_at_ms < ${nowMs}::bigint`.execute(
      deps.db,
    );
    out.dropped = Number(r.numAffectedRows ?? 0n);
  }
  if (again.length > 0) {
    out.requeued = await retryOnConflict(() => requeueLost(deps, again, nowMs));
    if (out.requeued.length > 0) {
      deps.log('warn', 'runs requeued: executor lost', { runIds: out.requeued });
      await deps.ldb.notify(DISPATCH_CHANNEL).catch(() => undefined);
    }
  }
  if (exhausted.length > 0) {
    out.failed = await failLost(deps, policy, exhausted, nowMs);
    if (out.failed.length > 0) deps.log('warn', 'runs failed: executor lost', { runIds: out.failed });
  }
  if (parked.length > 0) {
    const lost = await loseParked(deps, policy, parked, nowMs);
    out.parked = lost.counted;
    if (lost.counted.length > 0)
      deps.log('warn', 'parked turns: resume lost (lease expired)', { runIds: lost.counted });
    if (lost.failed.length > 0) {
      deps.log('warn', 'parked turns failed: executor lost', { runIds: lost.failed });
      out.failed.push(...lost.failed);
    }
  }
  return out;
}

/**
 * Leases of parked turns (`awaiting_input`, leased for their resume) that expired before the holder's
 * `resumed`: each a lost execution, in ONE transaction — the turn's row locked (SKIP LOCKED) still parked at
 * the lease's epoch, then the lease still expired before `nowMs` (a heartbeat or a `resumed` committed since
 * the scan wins: the turn is left alone). The lease is dropped and `lost_attempts` (read under the lock)
 * counted: the turn stays parked and ready again as of `nowMs` (`resume_lost_at`: it is offered behind the
 * parks that were ready before it, agents/leases.ts); the maxAttempts-th loss (a session run: the first) fails it
 * `executor_lost` (run-model's `fail` from awaiting_input; no interval is open).
 */
async function loseParked(
  deps: Deps,
  policy: Pick<LeasePolicy, 'maxAttempts'>,
  parked: readonly Expired[],
  nowMs: number,
): Promise<{ counted: string[]; failed: string[] }> {
  return withTx(deps.db, async (tx) => {
    // The lease dropped and the loss counted in the same statement; `lost_attempts` as read under the lock.
    const { rows } = await sql<{ run_id: string; tenant: string; lost_attempts: number; lifetime: string }>`
      WITH ${lockedExpired(parked, 'awaiting_input', nowMs)},
      dl AS (
        DELETE FROM run_leases l USING lr WHERE l.run_id = lr.id AND l.epoch = lr.attempt
          AND l.run_id IN (SELECT run_id FROM ll)
        RETURNING l.run_id
      ),
      ul AS (
        UPDATE runs r SET lost_attempts = r.lost_attempts + 1, resume_lost_at = ${nowMs}::bigint FROM lr
        WHERE r.id = lr.id AND lr.id IN (SELECT run_id FROM dl)
        RETURNING r.id
      )
      SELECT lr.id AS run_id, lr.tenant_id AS tenant, lr.lost_attempts, lr.lifetime FROM lr
      WHERE lr.id IN (SELECT id FROM ul)
      ORDER BY lr.id`.execute(tx);
    const out = { counted: [] as string[], failed: [] as string[] };
    for (const r of rows) {
      const lostAttempts = numeric(r.lost_attempts);
      if (!isLastAttempt({ lost_attempts: lostAttempts }, policy) && r.lifetime !== 'session') {
        out.counted.push(r.run_id);
        continue;
      }
      const message = `its executor was lost at resume (lease expired): lost attempt ${lostAttempts + 1} of ${policy.maxAttempts}`;
      await transitionTx(tx, deps, r.tenant, r.run_id, {
        type: 'fail',
        error: { code: LOST_CODE, message, retryable: true },
      });
      out.failed.push(r.run_id);
    }
    // Ready again for the next holder: the agent hosts' long-polls look at the commit.
    if (out.counted.length > 0) await announceTurnReady(tx);
    return out;
  });
}

/**
 * running → failed `executor_lost` for runs out of attempts, in ONE transaction: each run's row is locked
 * (SKIP LOCKED: a run another replica or a result holds is left to it), then its lease, which must still be
 * expired before `nowMs` at the run's attempt — a heartbeat committed since the scan extended it, and the
 * run is left running. The settle then writes under those locks (a heartbeat waits for the commit, and finds
 * the lease gone: lost).
 */
async function failLost(
  deps: Deps,
  policy: Pick<LeasePolicy, 'maxAttempts'>,
  exhausted: readonly Expired[],
  nowMs: number,
): Promise<string[]> {
  return withTx(deps.db, async (tx) => {
    const { rows } = await sql<{ run_id: string }>`
      WITH ${lockedExpired(exhausted, 'running', nowMs)}
      SELECT run_id FROM ll`.execute(tx);
    const still = new Set(rows.map((r) => r.run_id));
    const items: Finished[] = exhausted
      .filter((r) => still.has(r.run_id))
      .map((r) => {
        const message = `its executor was lost (lease expired): lost attempt ${r.lost_attempts + 1} of ${policy.maxAttempts}`;
        return {
          tenant: r.tenant,
          runId: r.run_id,
          epoch: r.attempt,
          event: { type: 'fail', error: { code: LOST_CODE, message, retryable: true } },
          // Nothing of the lost attempt was observed: no exit code, no executed interval; the record closes
          // `abandoned` (as a lost session's does).
          extras: { outputs: { summary: message }, nothingRan: true, closeReason: 'abandoned' },
        };
      });
    return items.length === 0 ? [] : settleMany(tx, deps, items);
  });
}

/**
 * running → queued (run-model's `requeue`) for runs still running at the lost epoch, in ONE statement, in
 * the control plane's lock order (runs → leases → slots → tenant rows → adm_wfq): the lease dropped, the slot
 * queued again, the tenant's counters moved back, the queue entry re-inserted as a new arrival of its tenant
 * (`requeueCtes`: its next WFQ tag, aged from now — one rule for every kind), the run's interval discarded
 * (a lost attempt attests nothing), and a `run.requeued` fact.
 */
async function requeueLost(deps: Deps, lost: readonly Expired[], nowMs: number): Promise<string[]> {
  if (nextStatus('running', 'requeue') !== 'queued')
    throw new Error('run-model: requeue is not running → queued');
  const at = new Date(nowMs).toISOString();
  const { rows } = await sql<{ id: string }>`
    WITH ${lockedExpired(lost, 'running', nowMs, sql`AND r.lifetime <> 'session' AND r.updated_at <= ${nowMs}::bigint`)},
    ${requeueCtes(sql`SELECT lr.tenant_id AS tenant, lr.id AS run_id FROM lr WHERE lr.id IN (SELECT run_id FROM ll)`, nowMs)},
    dl AS (DELETE FROM run_leases l USING ls WHERE l.run_id = ls.run_id RETURNING 1),
    ur AS (
      UPDATE runs r SET status = 'queued', updated_at = ${nowMs}::bigint,
        interval_started_at = NULL, interval_head = NULL, lost_attempts = r.lost_attempts + 1
      FROM ls WHERE r.id = ls.run_id
      RETURNING r.id, r.tenant_id, r.kind, r.attempt
    ),
    ev AS (
      INSERT INTO events (tenant_id, kind, run_id, payload, created_at)
      SELECT ur.tenant_id, 'run.requeued', ur.id, jsonb_build_object('runId', ur.id, 'kind', ur.kind,
        'cause', ${REQUEUE_CAUSE}::text, 'attempt', ur.attempt), ${at}::timestamptz
      FROM ur ORDER BY ur.id
      RETURNING 1
    ),
    note AS (SELECT pg_notify(${EVENTS_CHANNEL}, '') AS n FROM (SELECT 1 FROM ev LIMIT 1) e)
    SELECT ur.id FROM ur
    WHERE (SELECT count(*) FROM note) >= 0 AND (SELECT count(*) FROM dl) >= 0 AND (SELECT count(*) FROM ut) >= 0
      AND (SELECT count(*) FROM q) >= 0
    ORDER BY ur.id`.execute(deps.db);
  return rows.map((r) => r.id);
}
