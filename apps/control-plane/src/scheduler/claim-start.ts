// claimAndStart: the dispatch lane's claim AND start of up to `capacity` queued runs in ONE autocommit
// statement (one round trip, no BEGIN/COMMIT): the same rows, locks and writes as the admission store's
// claim (claimQueued) followed by each run's start transition.
//
// Order (WFQ): aged entries first (waited ≥ the stored `agingMs`, oldest first), then lane (interactive >
// background > batch), least finish tag, seq. Each arm is one ordered index scan of adm_queue (never a sort of
// the whole queue); the lock scan takes aged candidates first, then young ones, up to the pool.
//
// Locks, in the control plane's lock order (see settle-many.ts): each candidate's run row, queue row and slot
// are taken FOR UPDATE … SKIP LOCKED (in that order — a run a cancel holds is skipped, never waited for); then
// the candidates' tenant rows, sorted (the only waits); then the virtual-time rows, sorted by lane, gated
// behind the tenant rows. Each tenant gets at most `max_concurrent - running` read from its LOCKED row (under
// READ COMMITTED, FOR UPDATE returns the latest committed version), so two replicas never exceed a quota and
// never take one run twice.
//
// Writes: queue entries deleted, slots → running, tenant counters (running +k, queued −k per class), virtual
// time GREATEST per lane, runs → running (the status machine's start patch: updatedAt = startedAt = now, and
// the interval opens at now from the current record head), `run.started` facts + NOTIFY. The fact's data is
// run-model's `eventFromFact` of the `run.started` fact: {runId, kind, lifetime} (claim-start.test.ts checks
// it against `transition`). A run whose row was updated after `now` (another replica's clock) is skipped,
// as `transition` would refuse it.
//
// Leases: every start counts the run's attempt (its lease epoch); with `lease`, the lease is granted in the
// same statement (leases/store.ts leaseUpsert), so no run is ever running without one.
//
// Commit: this statement alone commits with `synchronous_commit = off` (set_config(…, true): the setting ends
// with its transaction — claim-start.test.ts checks the connection is back to `on`). It does not wait for the
// WAL flush, so it releases the tenant rows it holds one fsync sooner (creates and settles queue on them).
// What a crash can lose is only the last claims whose runs have not settled: those runs are `queued` again
// after restart and run again — an inline execution does not survive a crash anyway. Nothing durable can
// depend on a lost claim: any later synchronous commit (the run's settle, a cancel, a subscription's run
// caused by `run.started`) flushes the WAL up to itself, the claim's commit record included.
import { globalPolicy } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { dispatchOf } from '../admission-store/claim.js';
import { prepared } from '../db/prepared.js';
import type { Executor } from '../db/tx.js';
import { leaseUpsert, NEXT_ATTEMPT } from '../leases/store.js';
import { EVENTS_CHANNEL } from '../ledger/events.js';

export interface StartedRun {
  runId: string;
  /** The run's attempt (this start counted it): its lease epoch. */
  epoch: number;
  tenant: string;
  class: RunClass;
  enqueuedAt: number;
  waitedMs: number;
  subject: unknown;
}

interface Row {
  run_id: string;
  tenant: string;
  class: string;
  enqueued_at: string | number | bigint;
  subject: unknown;
  attempt: number;
}

/** Who holds the leases of the runs this claim starts (leases/), and for how long. */
export interface ClaimLease {
  holder: string;
  leaseMs: number;
}

const DEFAULT_AGING_MS = globalPolicy().agingMs;

/**
 * What a claimer can take beyond kinds (a runner's capabilities): only this tenant's runs (a tenant-scoped
 * runner; the arms' index scans are restricted to it), and only runs whose image is listed (`*`: any). A
 * run's image: its subject's `image`, else its eval harness's, else `default`.
 */
export interface ClaimScope {
  tenant?: string | undefined;
  images?: readonly string[] | undefined;
}

/** The image a run executes in, as SQL over `runs r` (see ClaimScope). */
export const RUN_IMAGE_SQL = sql`COALESCE(r.subject->>'image', (SELECT h.image FROM harnesses h
  WHERE h.tenant_id = r.tenant_id AND h.id = r.subject->'harness'->>'id'
    AND h.version = r.subject->'harness'->>'version'), 'default')`;

export async function claimAndStart(
  ex: Executor,
  capacity: number,
  now: Date,
  kinds: readonly string[],
  lease?: ClaimLease,
  scope: ClaimScope = {},
): Promise<StartedRun[]> {
  if (capacity <= 0 || kinds.length === 0) return [];
  const nowMs = now.getTime();
  const at = now.toISOString();
  // Over-select (as claimQueued does): candidates of tenants found at quota under the lock are dropped.
  const pool = capacity * 2 + 8;
  // The window: each arm's head of the queue, read alone (no lock) by one ordered index scan; then ONE scan
  // locks rows of the window only, in WFQ order (arm, position). The window keeps that plan a few primary-key
  // lookups per candidate whatever the statistics say (with young statistics a join of the whole queue to runs
  // and slots was planned as O(queue²)); it is wider than the pool so that rows another replica holds
  // (skipped) rarely leave this claim short. Runs are joined by id alone, their tenant compared after the
  // lock: a tenant equality would let the planner look runs up by (tenant, status) — every queued run of
  // the tenant, per candidate.
  const window = pool * 2;
  // One kind: an equality, so the (kind, lane, finish, seq) index serves the ordered scan.
  const kind = kinds.length === 1 ? sql`w.kind = ${kinds[0]}` : sql`w.kind = ANY(${[...kinds]}::text[])`;
  const tenantOnly = scope.tenant === undefined ? sql`` : sql`AND w.tenant = ${scope.tenant}`;
  const images = scope.images;
  const imageOnly =
    images === undefined || images.includes('*')
      ? sql``
      : sql`AND ${RUN_IMAGE_SQL} = ANY(${[...images]}::text[])`;
  type Fragment = ReturnType<typeof sql>;
  const arm = (n: number, age: Fragment, order: Fragment) => sql`
    SELECT ${n}::int AS arm, row_number() OVER (ORDER BY ${order}) AS pos, w.run_id, w.tenant FROM (
      SELECT w.run_id, w.tenant, w.lane, w.finish, w.seq, w.enqueued_at FROM adm_queue w
      WHERE ${age} AND ${kind} ${tenantOnly}
        AND EXISTS (SELECT 1 FROM adm_tenants t WHERE t.tenant = w.tenant AND t.running < t.max_concurrent)
      ORDER BY ${order}
      LIMIT ${window}::int
    ) w`;
  const { rows } = await sql<Row>`${sql.raw(prepared('claim_start'))}
    WITH cfg AS MATERIALIZED (
      SELECT ${nowMs}::bigint - COALESCE(
        (SELECT (g.policy->>'agingMs')::bigint FROM adm_global g WHERE g.id = 1), ${DEFAULT_AGING_MS}::bigint
      ) AS cutoff
    ),
    win AS MATERIALIZED (
      ${arm(0, sql`w.enqueued_at <= (SELECT cutoff FROM cfg)`, sql`w.enqueued_at, w.seq`)}
      UNION ALL
      ${arm(1, sql`w.enqueued_at > (SELECT cutoff FROM cfg)`, sql`w.lane, w.finish, w.seq`)}
    ),
    cand AS MATERIALIZED (
      SELECT w.arm, w.pos, q.run_id, q.tenant, q.class, q.lane, q.finish, q.enqueued_at, r.kind, r.lifetime,
        r.tenant_id AS run_tenant
      FROM win w
      JOIN adm_queue q ON q.tenant = w.tenant AND q.run_id = w.run_id
      JOIN runs r ON r.id = w.run_id
      JOIN adm_slots s ON s.tenant = w.tenant AND s.run_id = w.run_id
      WHERE r.status = 'queued' AND r.updated_at <= ${at}::timestamptz AND s.status = 'queued' ${imageOnly}
      ORDER BY w.arm, w.pos
      LIMIT ${pool}::int
      FOR UPDATE OF r, q, s SKIP LOCKED
    ),
    ten AS MATERIALIZED (
      SELECT t.tenant, t.max_concurrent - t.running AS room FROM adm_tenants t
      WHERE t.tenant IN (SELECT c.tenant FROM cand c WHERE c.run_tenant = c.tenant)
      ORDER BY t.tenant
      FOR UPDATE OF t
    ),
    pick AS MATERIALIZED (
      SELECT c.run_id, c.tenant, c.class, c.lane, c.finish, c.enqueued_at, c.kind, c.lifetime, c.arm, c.pos
      FROM (
        SELECT c.*, row_number() OVER (PARTITION BY c.tenant ORDER BY c.arm, c.pos) AS k FROM cand c
        WHERE c.run_tenant = c.tenant
      ) c
      JOIN ten ON ten.tenant = c.tenant
      WHERE c.k <= ten.room
      ORDER BY c.arm, c.pos
      LIMIT ${capacity}::int
    ),
    dq AS (DELETE FROM adm_queue q USING pick p WHERE q.tenant = p.tenant AND q.run_id = p.run_id RETURNING 1),
    us AS (
      UPDATE adm_slots s SET status = 'running', started_at = ${nowMs}::bigint
      FROM pick p WHERE s.tenant = p.tenant AND s.run_id = p.run_id RETURNING 1
    ),
    ut AS (
      UPDATE adm_tenants t SET running = t.running + d.n, queued = t.queued - d.n,
        queued_interactive = t.queued_interactive - d.qi, queued_background = t.queued_background - d.qb,
        queued_batch = t.queued_batch - d.qh
      FROM (
        SELECT tenant, count(*)::int AS n,
          (count(*) FILTER (WHERE class = 'interactive'))::int AS qi,
          (count(*) FILTER (WHERE class = 'background'))::int AS qb,
          (count(*) FILTER (WHERE class = 'batch'))::int AS qh
        FROM pick GROUP BY tenant
      ) d
      WHERE t.tenant = d.tenant RETURNING 1
    ),
    vlock AS MATERIALIZED (
      SELECT v.lane FROM adm_vtime v
      WHERE v.lane IN (SELECT lane FROM pick) AND (SELECT count(*) FROM ten) >= 0
      ORDER BY v.lane
      FOR UPDATE OF v
    ),
    uv AS (
      UPDATE adm_vtime v SET v = GREATEST(v.v, m.f)
      FROM (SELECT lane, max(finish) AS f FROM pick GROUP BY lane) m JOIN vlock l ON l.lane = m.lane
      WHERE v.lane = m.lane RETURNING 1
    ),
    ur AS (
      UPDATE runs r SET status = 'running', updated_at = ${at}::timestamptz, started_at = ${at}::timestamptz,
        interval_started_at = ${at}::timestamptz, interval_head = r.record_head, attempt = ${NEXT_ATTEMPT}
      FROM pick p WHERE r.id = p.run_id
      RETURNING r.id, r.subject, r.attempt, p.tenant, p.class, p.enqueued_at, p.arm, p.pos
    ),
    lease AS (${
      lease
        ? leaseUpsert(
            sql`SELECT id AS run_id, tenant, attempt::bigint AS epoch FROM ur`,
            lease.holder,
            nowMs,
            nowMs + lease.leaseMs,
          )
        : sql`SELECT 1 WHERE false`
    }),
    ev AS (
      INSERT INTO events (tenant_id, kind, run_id, payload, created_at)
      SELECT p.tenant, 'run.started', p.run_id,
        jsonb_build_object('runId', p.run_id, 'kind', p.kind, 'lifetime', p.lifetime), ${at}::timestamptz
      FROM pick p ORDER BY p.arm, p.pos
      RETURNING 1
    ),
    note AS (SELECT pg_notify(${EVENTS_CHANNEL}, '') AS n FROM (SELECT 1 FROM ev LIMIT 1) x),
    async AS (SELECT set_config('synchronous_commit', 'off', true) AS s)
    SELECT ur.id AS run_id, ur.tenant, ur.class, ur.enqueued_at, ur.subject, ur.attempt FROM ur
    WHERE (SELECT count(*) FROM note) >= 0 AND (SELECT count(*) FROM async) = 1
      AND (SELECT count(*) FROM lease) >= 0
    ORDER BY ur.arm, ur.pos`.execute(ex);
  return rows.map((r) => ({ ...dispatchOf(r, nowMs), subject: r.subject, epoch: r.attempt }));
}
