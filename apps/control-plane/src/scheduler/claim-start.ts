// claimAndStart: the dispatch lane's claim AND start of up to `capacity` queued runs in ONE autocommit
// statement (one round trip, no BEGIN/COMMIT): the admission store's claim statement (admission-store/
// claim.ts: its order — admission's kernel's —, locks and writes) with the ledger's half joined in.
//
// The ledger's half: each candidate's run row is locked FOR UPDATE … SKIP LOCKED before its queue row and
// slot (the control plane's lock order, see admission-store/sql/settle.ts — a run a cancel holds is skipped, never waited
// for); runs → running (the status machine's start patch: updatedAt = startedAt = now, and the interval opens
// at now from the current record head), `run.started` facts + NOTIFY. The fact's data is run-model's
// `eventFromFact` of the `run.started` fact: {runId, kind, lifetime} (claim-start.test.ts checks it against
// `transition`). A run whose row was updated after `now` (another replica's clock) is skipped, as
// `transition` would refuse it. Runs are joined by id alone, their tenant compared after the lock: a tenant
// equality would let the planner look runs up by (tenant, status) — every queued run of the tenant, per
// candidate.
//
// Leases: every start counts the run's attempt (its lease epoch); with `lease`, the lease is granted in the
// same statement (leases/store.ts leaseUpsert), so no run is ever running without one.
//
// Commit: an inline claim (no lease, or one held `inProcess`) commits with `synchronous_commit = off` for this
// statement alone (set_config(…, true): the setting ends with its transaction — claim-start.test.ts checks the
// connection is back to `on`). It does not wait for the WAL flush, so it releases the tenant rows it holds one
// fsync sooner (creates and settles queue on them). What a PostgreSQL crash can lose is only the last claims
// whose runs have not settled: those runs are `queued` again after restart, their attempt (lease epoch) rolled
// back, and run again. Such a lease never left this process: at worst an execution still in flight here settles
// under an epoch granted again to this same holder, and only one settle of the run is accepted. Nothing
// durable can depend on a lost claim: any later synchronous commit (the run's settle, a cancel, a
// subscription's run caused by `run.started`) flushes the WAL up to itself, the claim's commit record included.
//
// A lease handed to another process (a runner, an agent host: the lease is in the answer the moment this
// transaction commits) commits synchronously: after a crash that lost the claim, the run's attempt would roll
// back and the same epoch be granted again to another holder — two holders of one epoch, whose journals
// (keyed (run, epoch)) collide and either of whose settles could be accepted. Inside the caller's transaction
// (runners/leases.ts, agents/leases.ts) the asynchronous setting would also cover every other write of it.
import type { RunClass } from '@everdict/run-model';
import type { WireSegment } from '@everdict/runrecord';
import { sql } from 'kysely';
import { claimStatement, claimUntilServed, dispatchOf } from '../admission-store/sql/claim.js';
import type { LocalDelivery } from '../db/database.js';
import type { Executor } from '../db/tx.js';
import { leaseUpsert, NEXT_ATTEMPT } from '../leases/store.js';
import { EVENTS_CHANNEL } from '../ledger/events.js';
import type { RunRow } from '../ledger/runs.js';

export interface StartedRun {
  runId: string;
  /** The run's attempt (this start counted it): its lease epoch. */
  epoch: number;
  tenant: string;
  class: RunClass;
  enqueuedAt: number;
  waitedMs: number;
  subject: unknown;
  /** The run's hard expiry (`ttlSec`/`expiresAt`), epoch ms, when it has one: its execution stops there. */
  expiresAtMs?: number;
  /**
   * The run as this claim left it (`ClaimLease.carry`): its row (`r.*`, the slot's depth and start), the row
   * version the claim wrote (`xmin`) and its record segments — what the settle would read back
   * (batch-transitions.ts `Carried`).
   */
  carried?: Carried;
}

/** A run row as the settle reads it: with its row version (`xmin`) and its record's segments. */
export type Carried = RunRow & { version: string; segments: WireSegment[] | null };

interface Row {
  run_id: string;
  tenant: string;
  /** The claimed queue entry's class (a carried row's `class` is the run row's). */
  q_class: string;
  enqueued_at: string | number | bigint;
  subject: unknown;
  attempt: number;
  expires_at: Date | string | null;
  crowded: boolean;
}

/** Who holds the leases of the runs this claim starts (leases/), and for how long. */
export interface ClaimLease {
  holder: string;
  leaseMs: number;
  /**
   * The holder executes in this process and hands the lease to no one (the inline dispatch lane): only then
   * does the claim commit asynchronously. Absent: the lease leaves this process in the caller's answer (a
   * runner, an agent host), so the claim commits synchronously (see the header).
   */
  inProcess?: boolean;
  /**
   * Return each started run's whole row, version and segments (`StartedRun.carried`): the in-process settle
   * then writes against the version this claim wrote without reading the row back first (one statement per
   * settle batch fewer). Whatever changed the row since (a cancel, a sweep, a record append) changed its
   * version, and the settle reads that run again.
   */
  carry?: boolean;
  /**
   * The claimer's LISTEN side, for an autocommit claim (the inline lane): when no other process listens
   * (db/listener-presence.ts), the statement sends no NOTIFY and the `run.started` facts are announced to this
   * process's listeners in memory once it returned. Absent (inside a caller's transaction): the statement
   * NOTIFYs, delivered at that commit.
   */
  ldb?: LocalDelivery;
}

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
  const carry = lease?.carry === true;
  // Decided before the statement: a listener that appears meanwhile misses this one and polls.
  const local = lease?.ldb?.alone?.() === true;
  const images = scope.images;
  const restricted = images !== undefined && !images.includes('*');
  const imageOnly = restricted ? sql`AND ${RUN_IMAGE_SQL} = ANY(${[...images]}::text[])` : sql``;
  // The queue as this claimer can take it: its images only, in the window scans too (ClaimFilter.entry).
  const entry = restricted
    ? (alias: string) =>
        sql`EXISTS (SELECT 1 FROM runs r WHERE r.id = ${sql.ref(`${alias}.run_id`)}
          AND ${RUN_IMAGE_SQL} = ANY(${[...images]}::text[]))`
    : undefined;
  const ctes = sql`
    ur AS (
      UPDATE runs r SET status = 'running', updated_at = ${nowMs}::bigint,
        interval_started_at = ${nowMs}::bigint, interval_head = r.record_head, attempt = ${NEXT_ATTEMPT}
      FROM pick p WHERE r.id = p.run_id
      RETURNING ${
        carry ? sql`r.*, r.xmin::text AS version,` : sql`r.id, r.subject, r.attempt, r.expires_at,`
      } p.tenant, p.class AS q_class, p.enqueued_at, p.arm, p.pos
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
    note AS (SELECT pg_notify(${EVENTS_CHANNEL}, '') AS n FROM (SELECT 1 FROM ev LIMIT 1) x
      WHERE ${!local}::boolean),
    async AS (${
      lease === undefined || lease.inProcess === true
        ? sql`SELECT set_config('synchronous_commit', 'off', true) AS s`
        : sql`SELECT NULL::text AS s`
    }),`;
  // Carried: the row as the claim wrote it (with the claim's columns: tenant, q_class, enqueued_at), the slot's
  // depth and start (the claim's own `us` update), and the record's segments (none is appended within this
  // statement).
  const columns = carry
    ? sql`ur.*, s.depth AS causal_depth, s.started_at AS started_ms,
      (SELECT jsonb_agg(g.payload ORDER BY g.idx) FROM record_segments g WHERE g.run_id = ur.id) AS segments`
    : sql`ur.tenant, ur.q_class, ur.enqueued_at, ur.subject, ur.attempt, ur.expires_at`;
  const select = sql`SELECT ur.id AS run_id, ${columns}, (SELECT crowded FROM crowd) AS crowded
    FROM ur ${carry ? sql`JOIN us s ON s.tenant = ur.tenant AND s.run_id = ur.id` : sql``}
    WHERE (SELECT count(*) FROM note) >= 0 AND (SELECT count(*) FROM async) = 1
      AND (SELECT count(*) FROM lease) >= 0 AND (SELECT n FROM done) >= 0
    ORDER BY ur.arm, ur.pos`;
  return claimUntilServed(capacity, async (n) => {
    const { rows } = await sql<Row>`${claimStatement(
      n,
      nowMs,
      { kinds, tenant: scope.tenant, entry },
      {
        name: 'claim_start',
        join: sql`JOIN runs r ON r.id = w.run_id`,
        where: sql`AND r.status = 'queued' AND r.updated_at <= ${nowMs}::bigint ${imageOnly}`,
        lockFirst: sql`r,`,
        runTenant: sql`r.tenant_id`,
        ctes,
        select,
      },
    )}`.execute(ex);
    // Committed (an autocommit statement): its facts announced to this process alone (see `ClaimLease.ldb`).
    if (local && rows.length > 0) lease?.ldb?.deliverLocally?.([EVENTS_CHANNEL]);
    return {
      claimed: rows.map((r) => ({
        ...dispatchOf(
          { run_id: r.run_id, tenant: r.tenant, class: r.q_class, enqueued_at: r.enqueued_at },
          nowMs,
        ),
        subject: r.subject,
        epoch: r.attempt,
        ...(r.expires_at === null || r.expires_at === undefined
          ? {}
          : { expiresAtMs: new Date(r.expires_at).getTime() }),
        ...(carry ? { carried: carriedOf(r as Row & Carried) } : {}),
      })),
      crowded: rows[0]?.crowded === true,
    };
  });
}

/** The run row of a carrying claim's answer: its own columns, without the claim's. */
function carriedOf(r: Row & Carried & { q_class?: unknown; arm?: unknown; pos?: unknown }): Carried {
  const { run_id: _r, tenant: _t, enqueued_at: _e, crowded: _c, q_class: _q, arm: _a, pos: _p, ...row } = r;
  return row as Carried;
}
