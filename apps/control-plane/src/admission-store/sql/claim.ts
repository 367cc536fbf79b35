// The claim: up to `capacity` queued runs in admission's dispatch order (its kernel, wfq.ts `Wfq.next`), in
// ONE statement. The admission store's `claim` runs it alone; the dispatch lanes' claimAndStart
// (scheduler/claim-start.ts) runs it with the ledger's half (`ClaimLedger`: the run rows locked with the
// queue rows, then started) — one order, one set of locks and writes, whoever claims.
//
// Order — the kernel's, from the same state (wfq.ts explains the rules):
//   arm 0, aged: the tenants whose oldest visible queued entry waited ≥ the stored `agingMs` (below their
//     quota). Each starts at aged_start (still aged: `isContinuing`) or, promoted now, at
//     max(aged_start + aged_n / weight, the aged clock) with aged_n = 0; its j-th aged entry (oldest first)
//     is tagged start + (aged_n + j) / weight; entries in (tag, seq) order. Only the `window` tenants with the
//     least first tags can hold the first `window` entries, so only they are expanded.
//   arm 1, young: lane (interactive > background > batch), least finish tag, seq — one ordered index scan.
// A tenant gets at most `max_concurrent − running` (read from its locked row, less what settles released —
// released.ts), so reaching its quota mid-claim
// drops its later entries, as the kernel's blocking does. `now` must not go backwards between claims.
//
// Locks, in the control plane's lock order (admission-store/sql/settle.ts): the ledger's run rows (if any), queue rows and
// slots FOR UPDATE … SKIP LOCKED (a row another claim or a settle holds is skipped, never waited for); then
// the tenant rows, sorted (the only waits) — the candidates' and the newly promoted tenants'; then the
// virtual-time rows, sorted by lane (lane 3: the aged clock), gated behind the tenant rows.
//
// Writes: queue entries deleted, slots → running since `now`, tenant counters (running +k, queued −k per
// class), aged state (promotion, aged_n + served, aged_at = now; NULL once at quota — blocking forgets it),
// class clocks GREATEST(v, finish) and the aged clock GREATEST(v, tag).
import { AGED_LANE, type Dispatch, globalPolicy } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { numeric } from '../../db/numeric.js';
import { prepared } from '../../db/prepared.js';
import type { Executor, Tx } from '../../db/tx.js';
import { runningOf } from './released.js';
import { QUEUED_COLUMN } from './rows.js';

type Fragment = ReturnType<typeof sql>;

const DEFAULT_AGING_MS = globalPolicy().agingMs;

/** What a claim can take: these kinds (all when undefined), this tenant only, extra conditions on `runs r`. */
export interface ClaimFilter {
  kinds?: readonly string[] | undefined;
  tenant?: string | undefined;
  /**
   * A further condition on a queue entry (`alias` names its adm_queue row), applied where the kinds are: the
   * claim then sees only the entries it could take (a runner's images), as it sees only its kinds. A condition
   * the ledger's half alone applied left the window — the head of every entry — unclaimable for such a claimer,
   * however many of its own runs waited behind.
   */
  entry?: ((alias: string) => Fragment) | undefined;
}

/** The ledger's half of a claim (scheduler/claim-start.ts): its run rows, locked and started with the claim. */
export interface ClaimLedger {
  /** Joined into the candidates: `JOIN runs r …` and conditions on it (`AND …`). */
  join: Fragment;
  where: Fragment;
  /** The tables locked with the queue rows and slots, before them: e.g. `r,`. */
  lockFirst: Fragment;
  /** The candidate's tenant as its run row says (a mismatch is never claimed). */
  runTenant: Fragment;
  /** CTEs after the admission writes (reading `pick`), each followed by a comma. */
  ctes: Fragment;
  /** The statement's final SELECT. */
  select: Fragment;
  /** Statement name for the prepared-statement cache. */
  name: string;
}

/** One claimed row as the final SELECT of a store claim returns it. */
export interface ClaimedRow {
  run_id: string;
  tenant: string;
  class: string;
  enqueued_at: string | number | bigint;
  /**
   * The claim dropped a candidate past its tenant's room (max_concurrent − running): such a tenant's entries
   * can fill the window and the candidate pool, so a claim short of its capacity may have missed entries of
   * other tenants the kernel would serve next. Those tenants are at their quota now; claiming again (the
   * rest of the capacity, same clock) continues the kernel's order exactly — `claimUntilServed`.
   */
  crowded: boolean;
}

/**
 * The claim statement. Its CTE `pick` lists the claimed entries (run_id, tenant, class, lane, finish,
 * enqueued_at, kind, lifetime, arm, pos), in dispatch order by (arm, pos).
 */
export function claimStatement(
  capacity: number,
  nowMs: number,
  filter: ClaimFilter = {},
  ledger?: ClaimLedger,
): Fragment {
  // Over-select: candidates of tenants found at quota under the lock are dropped.
  const pool = capacity * 2 + 8;
  // The window: each arm's head of the queue, read alone (no lock); then ONE scan locks rows of the window
  // only, in order (arm, position). It keeps that plan a few primary-key lookups per candidate whatever the
  // statistics say, and is wider than the pool so that rows another replica holds (skipped) rarely leave this
  // claim short.
  const window = pool * 2;
  const kinds = filter.kinds;
  const entry = filter.entry;
  const entryOf = (alias: string) => (entry === undefined ? sql`` : sql`AND ${entry(alias)}`);
  const kindOf = (alias: string) =>
    kinds === undefined
      ? entryOf(alias)
      : kinds.length === 1
        ? sql`AND ${sql.ref(`${alias}.kind`)} = ${kinds[0]} ${entryOf(alias)}`
        : sql`AND ${sql.ref(`${alias}.kind`)} = ANY(${[...kinds]}::text[]) ${entryOf(alias)}`;
  const tenantOf = (alias: string) =>
    filter.tenant === undefined ? sql`` : sql`AND ${sql.ref(`${alias}.tenant`)} = ${filter.tenant}`;
  const name = ledger ? ledger.name : 'claim';
  // Promoted now (on the locked row): aged, and not still aged since its last aged event.
  const promote = sql`(d.aged AND NOT COALESCE(d.oldest_at <= t.aged_at - (SELECT aging FROM cfg), false))`;
  return sql`${sql.raw(prepared(name))}
    WITH cfg AS MATERIALIZED (
      SELECT COALESCE((SELECT (g.policy->>'agingMs')::bigint FROM adm_global g WHERE g.id = 1),
        ${DEFAULT_AGING_MS}::bigint) AS aging
    ),
    aclock AS MATERIALIZED (SELECT v FROM adm_vtime WHERE lane = ${AGED_LANE}::int),
    agedt AS MATERIALIZED (
      SELECT a.*,
        CASE WHEN a.cont THEN a.aged_start
          ELSE GREATEST(a.aged_start + a.aged_n / a.weight, COALESCE((SELECT v FROM aclock), 0)) END AS s,
        CASE WHEN a.cont THEN a.aged_n ELSE 0 END AS n
      FROM (
        SELECT t.tenant, t.weight, t.aged_start, t.aged_n, o.enqueued_at AS oldest_at, o.seq AS oldest_seq,
          COALESCE(o.enqueued_at <= t.aged_at - (SELECT aging FROM cfg), false) AS cont
        FROM adm_tenants t
        CROSS JOIN LATERAL (
          SELECT w.enqueued_at, w.seq FROM adm_queue w WHERE w.tenant = t.tenant ${kindOf('w')}
          ORDER BY w.enqueued_at, w.seq LIMIT 1
        ) o
        WHERE ${runningOf('t')} < t.max_concurrent AND t.queued > 0 ${tenantOf('t')}
          AND o.enqueued_at <= ${nowMs}::bigint - (SELECT aging FROM cfg)
          AND EXISTS (SELECT 1 FROM adm_queue x
            WHERE x.enqueued_at <= ${nowMs}::bigint - (SELECT aging FROM cfg) ${kindOf('x')} ${tenantOf('x')})
      ) a
    ),
    agedtop AS MATERIALIZED (
      SELECT * FROM agedt ORDER BY s + (n + 1) / weight, oldest_seq LIMIT ${window}::int
    ),
    win AS MATERIALIZED (
      SELECT 0 AS arm, row_number() OVER (ORDER BY x.tag, x.seq) AS pos, x.run_id, x.tenant, x.tag FROM (
        SELECT e.run_id, e.tenant, e.seq, a.s + (a.n + e.j) / a.weight AS tag
        FROM agedtop a CROSS JOIN LATERAL (
          SELECT w.run_id, w.tenant, w.seq, row_number() OVER (ORDER BY w.enqueued_at, w.seq) AS j FROM (
            SELECT w.run_id, w.tenant, w.seq, w.enqueued_at FROM adm_queue w
            WHERE w.tenant = a.tenant AND w.enqueued_at <= ${nowMs}::bigint - (SELECT aging FROM cfg) ${kindOf('w')}
            ORDER BY w.enqueued_at, w.seq LIMIT ${window}::int
          ) w
        ) e
        ORDER BY tag, e.seq LIMIT ${window}::int
      ) x
      UNION ALL
      SELECT 1 AS arm, row_number() OVER (ORDER BY w.lane, w.finish, w.seq) AS pos, w.run_id, w.tenant,
        NULL::float8 AS tag FROM (${youngHead(
          sql`SELECT w.run_id, w.tenant, w.lane, w.finish, w.seq FROM adm_queue w
          WHERE w.enqueued_at > ${nowMs}::bigint - (SELECT aging FROM cfg) ${tenantOf('w')} ${entryOf('w')}
            AND EXISTS (SELECT 1 FROM adm_tenants t WHERE t.tenant = w.tenant AND ${runningOf('t')} < t.max_concurrent)`,
          kinds,
          window,
        )}) w
    ),
    cand AS MATERIALIZED (
      SELECT w.arm, w.pos, w.tag, q.run_id, q.tenant, q.class, q.lane, q.finish, q.enqueued_at, s.kind,
        s.lifetime, ${ledger ? ledger.runTenant : sql`q.tenant`} AS run_tenant
      FROM win w
      ${ledger ? ledger.join : sql``}
      JOIN adm_queue q ON q.tenant = w.tenant AND q.run_id = w.run_id
      JOIN adm_slots s ON s.tenant = w.tenant AND s.run_id = w.run_id
      WHERE s.status = 'queued' ${ledger ? ledger.where : sql``}
      ORDER BY w.arm, w.pos
      LIMIT ${pool}::int
      FOR UPDATE OF ${ledger ? ledger.lockFirst : sql``} q, s SKIP LOCKED
    ),
    ten AS MATERIALIZED (
      SELECT t.tenant, t.max_concurrent - ${runningOf('t')} AS room FROM adm_tenants t
      WHERE t.tenant IN (SELECT c.tenant FROM cand c WHERE c.run_tenant = c.tenant)
        OR t.tenant IN (SELECT a.tenant FROM agedt a WHERE NOT a.cont)
      ORDER BY t.tenant
      FOR UPDATE OF t
    ),
    ranked AS MATERIALIZED (
      SELECT c.*, row_number() OVER (PARTITION BY c.tenant ORDER BY c.arm, c.pos) AS k, ten.room FROM cand c
      JOIN ten ON ten.tenant = c.tenant
      WHERE c.run_tenant = c.tenant
    ),
    pick AS MATERIALIZED (
      SELECT c.run_id, c.tenant, c.class, c.lane, c.finish, c.tag, c.enqueued_at, c.kind, c.lifetime, c.arm,
        c.pos
      FROM ranked c
      WHERE c.k <= c.room
      ORDER BY c.arm, c.pos
      LIMIT ${capacity}::int
    ),
    -- A candidate past its tenant's room, and more entries than the window or the pool saw: they may hold
    -- other tenants' entries the kernel serves next (see ClaimedRow.crowded).
    crowd AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM ranked c WHERE c.k > c.room)
        AND ((SELECT count(*) FROM cand) >= ${pool}::int
          OR (SELECT count(*) FROM win WHERE arm = 0) >= ${window}::int
          OR (SELECT count(*) FROM win WHERE arm = 1) >= ${window}::int) AS crowded
    ),
    dq AS (DELETE FROM adm_queue q USING pick p WHERE q.tenant = p.tenant AND q.run_id = p.run_id RETURNING 1),
    us AS (
      UPDATE adm_slots s SET status = 'running', started_at = ${nowMs}::bigint
      FROM pick p WHERE s.tenant = p.tenant AND s.run_id = p.run_id
      RETURNING s.tenant, s.run_id, s.depth, s.started_at -- the ledger's half may join it (claim-start.ts carry)
    ),
    ut AS (
      UPDATE adm_tenants t SET running = t.running + d.n, queued = t.queued - d.n,
        queued_interactive = t.queued_interactive - d.qi, queued_background = t.queued_background - d.qb,
        queued_batch = t.queued_batch - d.qh,
        aged_start = CASE WHEN ${promote} THEN
          GREATEST(t.aged_start + t.aged_n / t.weight, COALESCE((SELECT v FROM aclock), 0)) ELSE t.aged_start END,
        aged_n = CASE WHEN ${promote} THEN 0 ELSE t.aged_n END + d.na,
        aged_at = CASE WHEN ${runningOf('t')} + d.n >= t.max_concurrent THEN NULL
          WHEN ${promote} OR d.na > 0 THEN ${nowMs}::bigint ELSE t.aged_at END
      FROM (
        SELECT ten.tenant, COALESCE(p.n, 0) AS n, COALESCE(p.na, 0) AS na, COALESCE(p.qi, 0) AS qi,
          COALESCE(p.qb, 0) AS qb, COALESCE(p.qh, 0) AS qh, a.tenant IS NOT NULL AS aged, a.oldest_at
        FROM ten
        LEFT JOIN agedt a ON a.tenant = ten.tenant
        LEFT JOIN (
          SELECT tenant, count(*)::int AS n, (count(*) FILTER (WHERE arm = 0))::int AS na,
            (count(*) FILTER (WHERE class = 'interactive'))::int AS qi,
            (count(*) FILTER (WHERE class = 'background'))::int AS qb,
            (count(*) FILTER (WHERE class = 'batch'))::int AS qh
          FROM pick GROUP BY tenant
        ) p ON p.tenant = ten.tenant
      ) d
      WHERE t.tenant = d.tenant RETURNING 1
    ),
    vmax AS MATERIALIZED (
      SELECT lane, max(finish) AS f FROM pick GROUP BY lane
      UNION ALL
      SELECT ${AGED_LANE}::int, max(tag) FROM pick WHERE arm = 0 HAVING count(*) > 0
    ),
    vlock AS MATERIALIZED (
      SELECT v.lane FROM adm_vtime v
      WHERE v.lane IN (SELECT lane FROM vmax) AND (SELECT count(*) FROM ten) >= 0
      ORDER BY v.lane
      FOR UPDATE OF v
    ),
    uv AS (
      UPDATE adm_vtime v SET v = GREATEST(v.v, m.f)
      FROM vmax m JOIN vlock l ON l.lane = m.lane
      WHERE v.lane = m.lane RETURNING 1
    ),
    ${ledger ? ledger.ctes : sql``}
    done AS (SELECT (SELECT count(*) FROM ut) + (SELECT count(*) FROM uv) AS n)
    ${
      ledger
        ? ledger.select
        : sql`SELECT p.run_id, p.tenant, p.class, p.enqueued_at, (SELECT crowded FROM crowd) AS crowded FROM pick p
    WHERE (SELECT n FROM done) >= 0 ORDER BY p.arm, p.pos`
    }`;
}

/**
 * The young arm's head: the first `window` entries of `entries` (a SELECT over `adm_queue w`, without its kind
 * condition) in (lane, finish, seq) order, of the given kinds. One ordered scan of adm_queue_kind_order
 * (kind, lane, finish, seq) per kind, merged: the first `window` of the union lie among each kind's first
 * `window`. Without kinds (the store's claim: any kind), the kinds are those queued, found by a skip scan of
 * the same index — one probe per distinct kind (migration 0025 dropped adm_queue_order, which served this).
 */
function youngHead(entries: Fragment, kinds: readonly string[] | undefined, window: number): Fragment {
  const head = (kind: Fragment) =>
    sql`${entries} AND w.kind = ${kind} ORDER BY w.lane, w.finish, w.seq LIMIT ${window}::int`;
  if (kinds !== undefined && kinds.length === 1) return head(sql`${kinds[0]}`);
  const source =
    kinds !== undefined
      ? sql`unnest(${[...kinds]}::text[]) AS k(kind)`
      : sql`(WITH RECURSIVE ks(kind) AS (
          (SELECT q.kind FROM adm_queue q WHERE q.kind IS NOT NULL ORDER BY q.kind LIMIT 1)
          UNION ALL
          SELECT (SELECT q.kind FROM adm_queue q WHERE q.kind > ks.kind ORDER BY q.kind LIMIT 1)
          FROM ks WHERE ks.kind IS NOT NULL
        ) SELECT ks.kind FROM ks WHERE ks.kind IS NOT NULL) k`;
  return sql`SELECT w.* FROM ${source} CROSS JOIN LATERAL (${head(sql`k.kind`)}) w
    ORDER BY w.lane, w.finish, w.seq LIMIT ${window}::int`;
}

/** The admission store's claim: the claim statement alone (no ledger rows). */
export async function claimQueued(
  ex: Executor,
  capacity: number,
  now: number,
  filter: ClaimFilter = {},
): Promise<Dispatch[]> {
  return claimUntilServed(capacity, async (n) => {
    const { rows } = await sql<ClaimedRow>`${claimStatement(n, now, filter)}`.execute(ex);
    return { claimed: rows.map((r) => dispatchOf(r, now)), crowded: rows[0]?.crowded === true };
  });
}

/**
 * Claims until `capacity` is served, or a claim took nothing, or took all it could see (not crowded): one
 * statement serves a prefix of the kernel's order (a crowded window can leave it short), so the statements
 * together serve what `Wfq.next` would, `capacity` times (aged-order.test.ts).
 */
export async function claimUntilServed<T>(
  capacity: number,
  claim: (capacity: number) => Promise<{ claimed: T[]; crowded: boolean }>,
): Promise<T[]> {
  const served: T[] = [];
  while (served.length < capacity) {
    const { claimed, crowded } = await claim(capacity - served.length);
    served.push(...claimed);
    if (claimed.length === 0 || !crowded) break;
  }
  return served;
}

/** A claimed queue entry as admission's Dispatch (how long it waited, as of `now`). */
export function dispatchOf(
  c: { run_id: string; tenant: string; class: string; enqueued_at: string | number | bigint },
  now: number,
): Dispatch {
  const enqueuedAt = numeric(c.enqueued_at);
  return {
    runId: c.run_id,
    tenant: c.tenant,
    class: c.class as RunClass,
    enqueuedAt,
    waitedMs: now - enqueuedAt,
  };
}

/**
 * Queued → running for some of one tenant's runs whose slots the caller holds, outside the dispatch order (a
 * run started elsewhere): queue entries dropped, slots running since `now`, the tenant's queued counters (per
 * class) moved to running; at its quota the tenant's aged state is forgotten, as a claim does.
 */
export async function markStarted(
  tx: Tx,
  tenant: string,
  runs: readonly { run_id: string; class: string }[],
  now: number,
): Promise<void> {
  const ids = runs.map((c) => c.run_id);
  await tx.deleteFrom('adm_queue').where('tenant', '=', tenant).where('run_id', 'in', ids).execute();
  await tx
    .updateTable('adm_slots')
    .set({ status: 'running', started_at: now })
    .where('tenant', '=', tenant)
    .where('run_id', 'in', ids)
    .execute();
  const perClass = { interactive: 0, background: 0, batch: 0 } satisfies Record<RunClass, number>;
  for (const c of runs) perClass[c.class as RunClass]++;
  await sql`UPDATE adm_tenants t SET running = t.running + ${runs.length}::int, queued = t.queued - ${runs.length}::int,
      ${sql.ref(QUEUED_COLUMN.interactive)} = t.${sql.ref(QUEUED_COLUMN.interactive)} - ${perClass.interactive}::int,
      ${sql.ref(QUEUED_COLUMN.background)} = t.${sql.ref(QUEUED_COLUMN.background)} - ${perClass.background}::int,
      ${sql.ref(QUEUED_COLUMN.batch)} = t.${sql.ref(QUEUED_COLUMN.batch)} - ${perClass.batch}::int,
      aged_at = CASE WHEN ${runningOf('t')} + ${runs.length}::int >= t.max_concurrent THEN NULL ELSE t.aged_at END
    WHERE t.tenant = ${tenant}`.execute(tx);
}
