// Where a requeued run re-enters the admission queue (leases/sweep.ts `requeueLost`).
//
// An AGENT TURN whose execution was lost re-enters as a new arrival of its tenant, as admission's kernel
// enqueues one (wfq.ts `Wfq.enqueue`, the SQL in admission-store/sql/wfq-tags.ts): its finish tag is the
// tenant's next in its lane (max(V_lane, the tenant's last tag) + 1 / weight — behind the tenant's queued
// peers; the lost execution was service, so it is charged again) and its enqueue time is the requeue's, so
// it ages from now, not from its first admission. Before, it went back at the lane's virtual time with its
// original enqueue time: ahead of every queued peer and, once aged, first among its tenant's aged entries —
// a turn that crashed every host was offered first again each time, until its attempts ran out, and the
// conversation's (and tenant's) other turns waited behind it.
// Other kinds keep their rule (the lane's virtual time, the original enqueue time).
// The claim's order (admission-store/sql/claim.ts) is unchanged: it reads the same columns as for any entry.
import { LANE } from '@everdict/admission';
import { sql } from 'kysely';
import { laneQueued, wfqTagCtes } from '../admission-store/sql/wfq-tags.js';

type Fragment = ReturnType<typeof sql>;

/** The kinds re-entering as new arrivals. */
export const FAIR_REQUEUE_KINDS = ['agent'] as const;

/**
 * CTEs (comma-separated, none after) over `ls` (the requeued slots: run_id, tenant, class, kind, admitted_at)
 * and `ut` (their tenant rows after the update: tenant, weight, per-class queued counters): `rq` (each entry,
 * its lane, `fair`, its rank among its tenant's fair entries of that lane), adm_wfq's upsert (`wfq_src`, `f`)
 * and `q`, the queue entries.
 */
export function fairRequeueCtes(nowMs: number): Fragment {
  const kinds = sql.join(FAIR_REQUEUE_KINDS.map((k) => sql.lit(k)));
  const laneOf = sql`CASE ls.class WHEN 'interactive' THEN ${LANE.interactive}::int
    WHEN 'background' THEN ${LANE.background}::int ELSE ${LANE.batch}::int END`;
  return sql`rq AS MATERIALIZED (
      SELECT y.*,
        (count(*) OVER (PARTITION BY y.tenant, y.lane))::int AS k_all,
        (count(*) FILTER (WHERE y.fair) OVER (PARTITION BY y.tenant, y.lane))::int AS k,
        (row_number() OVER (PARTITION BY y.tenant, y.lane, y.fair ORDER BY y.run_id))::int AS rank
      FROM (SELECT ls.run_id, ls.tenant, ls.class, ls.kind, ls.admitted_at, ${laneOf} AS lane,
        ls.kind IN (${kinds}) AS fair FROM ls) y
    ),
    ${wfqTagCtes(sql`SELECT rq.tenant, rq.lane, max(rq.k)::int AS k, max(ut.weight) AS weight,
        max(${laneQueued('ut', sql`rq.lane`)}) = max(rq.k_all) AS fresh
      FROM rq JOIN ut ON ut.tenant = rq.tenant WHERE rq.fair GROUP BY rq.tenant, rq.lane`)},
    q AS (
      INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
      SELECT rq.run_id, rq.tenant, rq.class, rq.lane,
        CASE WHEN rq.fair THEN f.start_v + (f.n - (rq.k - rq.rank)) / ut.weight
          ELSE (SELECT v FROM adm_vtime WHERE lane = rq.lane) END,
        CASE WHEN rq.fair THEN ${nowMs}::bigint ELSE rq.admitted_at END,
        rq.kind
      FROM rq JOIN ut ON ut.tenant = rq.tenant LEFT JOIN f ON rq.fair AND f.tenant = rq.tenant AND f.lane = rq.lane
      RETURNING 1
    )`;
}
