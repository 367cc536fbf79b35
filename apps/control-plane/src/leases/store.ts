// The lease table (run_leases, migration 0007): one row per run an executor holds. The epoch is the run's
// `attempt` (incremented by every start, every lease of a parked turn's resume included: strictly monotonic
// per run): a holder proves it is the current attempt by its epoch, and a result or heartbeat carrying an
// older one is refused (`stale_lease`, 409) and changes nothing. The attempts rule does not read it: it
// counts lost executions (`runs.lost_attempts`, sweep.ts).
//
// Lock order: runs (by id) → run_leases (by run_id) → the admission rows (admission-store/sql/settle.ts). grant locks the
// run first; renew touches leases only; the sweep (sweep.ts) locks runs, then leases.
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import { type Db, type Executor, retryOnConflict } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';

export interface Lease {
  runId: string;
  tenant: string;
  holder: string;
  /** The run's attempt this lease fences: results must carry it. */
  epoch: number;
  expiresAtMs: number;
}

export interface HeldLease {
  runId: string;
  epoch: number;
}

export interface RenewResult {
  /** Leases extended to nowMs + leaseMs. */
  renewed: HeldLease[];
  /** Leases the holder believed it held but no longer does (expired and swept, superseded, released). */
  lost: string[];
}

type Fragment = ReturnType<typeof sql>;

/**
 * The lease rows for `source` — a SELECT of (run_id text, tenant text, epoch bigint) — held by `holder`
 * until `expiresAtMs`: a CTE body for a statement that starts runs (claim-start.ts) and for `grant`.
 * A run's previous lease (an older epoch) is replaced.
 */
export function leaseUpsert(source: Fragment, holder: string, nowMs: number, expiresAtMs: number): Fragment {
  return sql`
    INSERT INTO run_leases (run_id, tenant, holder, epoch, granted_at_ms, renewed_at_ms, expires_at_ms)
    SELECT s.run_id, s.tenant, ${holder}, s.epoch, ${nowMs}::bigint, ${nowMs}::bigint, ${expiresAtMs}::bigint
    FROM (${source}) s
    ON CONFLICT (run_id) DO UPDATE SET tenant = EXCLUDED.tenant, holder = EXCLUDED.holder,
      epoch = EXCLUDED.epoch, granted_at_ms = EXCLUDED.granted_at_ms, renewed_at_ms = EXCLUDED.renewed_at_ms,
      expires_at_ms = EXCLUDED.expires_at_ms
    RETURNING run_id, tenant, epoch`;
}

/**
 * The next attempt of a run row aliased `r`: every start counts one (the new lease's epoch). Not the
 * attempts rule's count: that is `lost_attempts` (sweep.ts).
 */
export const NEXT_ATTEMPT = sql`r.attempt + 1`;

/**
 * A lease on runs already `running` (a runner or the agent service started them): each run's attempt is
 * counted (its new epoch) and its lease held by `holder` for `leaseMs`. One statement. Runs not running
 * (or of another tenant) get none.
 */
export async function grant(
  ex: Executor,
  runs: readonly { runId: string; tenant: string }[],
  holder: string,
  nowMs: number,
  leaseMs: number,
): Promise<Lease[]> {
  if (runs.length === 0) return [];
  const ids = runs.map((r) => r.runId);
  const tenants = runs.map((r) => r.tenant);
  const expiresAtMs = nowMs + leaseMs;
  const { rows } = await sql<{ run_id: string; tenant: string; epoch: string | number }>`
    WITH want AS (SELECT * FROM unnest(${ids}::text[], ${tenants}::text[]) AS w(run_id, tenant)),
    locked AS MATERIALIZED (
      SELECT r.id FROM runs r JOIN want w ON w.run_id = r.id AND w.tenant = r.tenant_id
      WHERE r.status = 'running' ORDER BY r.id FOR UPDATE OF r
    ),
    bumped AS (
      UPDATE runs r SET attempt = ${NEXT_ATTEMPT} FROM locked l WHERE r.id = l.id
      RETURNING r.id AS run_id, r.tenant_id AS tenant, r.attempt::bigint AS epoch
    ),
    l AS (${leaseUpsert(sql`SELECT run_id, tenant, epoch FROM bumped`, holder, nowMs, expiresAtMs)})
    SELECT run_id, tenant, epoch FROM l ORDER BY run_id`.execute(ex);
  return rows.map((r) => ({
    runId: r.run_id,
    tenant: r.tenant,
    holder,
    epoch: numeric(r.epoch),
    expiresAtMs,
  }));
}

/**
 * `expires_at_ms` of a lease its holder's revocation ended (runners/leases.ts `expireHolder`): expired at once
 * for the sweep, and final — no heartbeat renews it and no result is accepted under it.
 */
export const REVOKED_EXPIRY_MS = -1;

/**
 * A holder's heartbeat: every lease in `held` still held by `holder` at its epoch is extended to
 * nowMs + leaseMs; the others are reported lost (the holder must stop those executions — their results
 * would be refused). A lease ended by its holder's revocation is lost, even to a heartbeat that was
 * authenticated before the revocation committed. (A lease that merely ran out before the sweep moved it is
 * renewed: a late heartbeat wins over the sweep, sweep.ts.) One statement.
 */
export async function renew(
  ex: Executor,
  holder: string,
  held: readonly HeldLease[],
  nowMs: number,
  leaseMs: number,
): Promise<RenewResult> {
  if (held.length === 0) return { renewed: [], lost: [] };
  const { rows } = await sql<{ run_id: string; epoch: string | number }>`
    UPDATE run_leases l SET renewed_at_ms = ${nowMs}::bigint,
      expires_at_ms = GREATEST(l.expires_at_ms, ${nowMs + leaseMs}::bigint)
    FROM unnest(${held.map((h) => h.runId)}::text[], ${held.map((h) => h.epoch)}::bigint[]) AS h(run_id, epoch)
    WHERE l.run_id = h.run_id AND l.epoch = h.epoch AND l.holder = ${holder}
      AND l.expires_at_ms <> ${REVOKED_EXPIRY_MS}::bigint
    RETURNING l.run_id, l.epoch`.execute(ex);
  const ok = new Set(rows.map((r) => r.run_id));
  return {
    renewed: rows.map((r) => ({ runId: r.run_id, epoch: numeric(r.epoch) })),
    lost: held.filter((h) => !ok.has(h.runId)).map((h) => h.runId),
  };
}

/**
 * A heartbeat that also drops leases whose run left the statuses its holder executes in (cancelled,
 * settled by someone else): `lost` = the leases not renewed + the renewed ones no longer live.
 */
export async function renewLive(
  ex: Db,
  holder: string,
  held: readonly HeldLease[],
  nowMs: number,
  leaseMs: number,
  liveStatuses: readonly string[],
): Promise<string[]> {
  // Renewing is idempotent (GREATEST): a deadlock with a settle that locks the same leases in another
  // order rolls the statement back whole, and it is run again rather than answered as a 500.
  const { renewed, lost } = await retryOnConflict(() => renew(ex, holder, held, nowMs, leaseMs));
  if (renewed.length === 0) return lost;
  const { rows } = await sql<{ id: string }>`
    SELECT id FROM runs
    WHERE id = ANY(${renewed.map((r) => r.runId)}::text[]) AND status = ANY(${[...liveStatuses]}::text[])`.execute(
    ex,
  );
  const live = new Set(rows.map((r) => r.id));
  return [...lost, ...renewed.filter((r) => !live.has(r.runId)).map((r) => r.runId)];
}

/** The stale-lease refusal: typed, 409, with the run and the epoch offered. */
export function staleLease(runId: string, epoch: number, current: number | null): ControlPlaneError {
  return new ControlPlaneError(
    'stale_lease',
    `run ${runId}: epoch ${epoch} is not its current lease${current === null ? '' : ` (${current})`}`,
    { runId, epoch, current },
  );
}

/**
 * Throw `stale_lease` (409) unless `runId`'s lease is held at `epoch` (by `holder`, when given) and was not
 * ended by its holder's revocation (`REVOKED_EXPIRY_MS`). Call it
 * inside the transaction that applies the result, after locking the run row: then the check holds
 * until that transaction commits (the sweep locks the run before it requeues).
 */
export async function assertCurrentEpoch(
  ex: Executor,
  runId: string,
  epoch: number,
  holder?: string,
): Promise<void> {
  const row = await ex
    .selectFrom('run_leases')
    .select(['epoch', 'holder', 'expires_at_ms'])
    .where('run_id', '=', runId)
    .executeTakeFirst();
  const current = row ? numeric(row.epoch) : null;
  if (
    current !== epoch ||
    (holder !== undefined && row?.holder !== holder) ||
    numeric(row?.expires_at_ms) === REVOKED_EXPIRY_MS
  ) {
    throw staleLease(runId, epoch, current);
  }
}

/** Drop a run's lease at `epoch` (its result is settled, or its holder gave it up). False if not held. */
export async function release(ex: Executor, runId: string, epoch: number): Promise<boolean> {
  const r = await ex
    .deleteFrom('run_leases')
    .where('run_id', '=', runId)
    .where('epoch', '=', epoch)
    .executeTakeFirst();
  return Number(r.numDeletedRows ?? 0n) === 1;
}

/** A CTE body deleting the leases of the runs `source` lists (SELECT of run_id text): their results settled. */
export function releaseSettled(source: Fragment): Fragment {
  return sql`DELETE FROM run_leases l USING (${source}) s WHERE l.run_id = s.run_id RETURNING 1`;
}
