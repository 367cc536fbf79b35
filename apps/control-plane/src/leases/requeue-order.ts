// Where a requeued run re-enters the admission queue (leases/sweep.ts `requeueLost`): ONE rule for every kind
// (agent turns, runner-leased command/eval/sandbox runs, inline runs). A run whose execution was lost
// (lease expired, runner or agent host revoked, host lost) re-enters as a new arrival of its tenant, as
// admission's kernel enqueues one (wfq.ts `Wfq.enqueue`, the SQL in admission-store/sql/wfq-tags.ts): its
// finish tag is the tenant's next in its lane (max(V_lane, the tenant's last tag) + 1 / weight — behind the
// tenant's queued peers; the lost execution was service, so it is charged again) and its enqueue time is the
// requeue's, so it ages from now, not from its first admission. Before, every kind but agent turns went back
// at the lane's virtual time with its original enqueue time: ahead of every queued peer and, once aged, first
// among its tenant's aged entries — a run that crashed every host was offered first again each time, until
// its attempts ran out, and its tenant's other runs waited behind it.
// Every path that requeues goes through here: the lease sweep is the only writer of `running → queued`
// (a runner's or agent host's revoke expires its leases and sweeps; the inline executor's lost leases expire).
// The claim's order (admission-store/sql/claim.ts) is unchanged: it reads the same columns as for any entry.
import { LANE } from '@everdict/admission';
import { sql } from 'kysely';
import { laneQueued, wfqTagCtes } from '../admission-store/sql/wfq-tags.js';

type Fragment = ReturnType<typeof sql>;

/**
 * The admission half of a requeue, as CTEs (comma-separated, none after), in the control plane's lock order
 * (slots → tenant rows → adm_wfq; the caller locked the run rows and leases first). `lost` is a SELECT of
 * (tenant, run_id): the runs whose execution was lost. CTEs: `ls` (their slots still running, locked: run_id,
 * tenant, class, kind), `us` (the slots queued again), `d`, `tl` and `ut` (the tenants' counters moved back:
 * running − n, queued + n per class; `ut` RETURNs tenant, weight and the per-class queued counters), `rq` (each
 * entry, its lane and its rank among its tenant's requeued entries of that lane, by run id), adm_wfq's upsert
 * (`wfq_src`, `f`) and `q`, the queue entries — inserted in run-id order, so their `seq` follows their tags.
 */
export function requeueCtes(lost: Fragment, nowMs: number): Fragment {
  const laneOf = sql`CASE ls.class WHEN 'interactive' THEN ${LANE.interactive}::int
    WHEN 'background' THEN ${LANE.background}::int ELSE ${LANE.batch}::int END`;
  return sql`ls AS MATERIALIZED (
      SELECT s.tenant, s.run_id, s.class, s.kind FROM adm_slots s
      JOIN (${lost}) x ON s.tenant = x.tenant AND s.run_id = x.run_id
      WHERE s.status = 'running'
      ORDER BY s.tenant, s.run_id
      FOR UPDATE OF s
    ),
    us AS (
      UPDATE adm_slots s SET status = 'queued', started_at = NULL FROM ls
      WHERE s.tenant = ls.tenant AND s.run_id = ls.run_id RETURNING 1
    ),
    d AS MATERIALIZED (
      SELECT tenant, count(*)::int AS n,
        (count(*) FILTER (WHERE class = 'interactive'))::int AS qi,
        (count(*) FILTER (WHERE class = 'background'))::int AS qb,
        (count(*) FILTER (WHERE class = 'batch'))::int AS qh
      FROM ls GROUP BY tenant
    ),
    tl AS MATERIALIZED (
      SELECT t.tenant FROM adm_tenants t JOIN d ON d.tenant = t.tenant
      WHERE (SELECT count(*) FROM us) >= 0
      ORDER BY t.tenant
      FOR UPDATE OF t
    ),
    ut AS (
      UPDATE adm_tenants t SET running = GREATEST(t.running - d.n, 0), queued = t.queued + d.n,
        queued_interactive = t.queued_interactive + d.qi, queued_background = t.queued_background + d.qb,
        queued_batch = t.queued_batch + d.qh
      FROM d JOIN tl ON tl.tenant = d.tenant WHERE t.tenant = d.tenant
      RETURNING t.tenant, t.weight, t.queued_interactive, t.queued_background, t.queued_batch
    ),
    rq AS MATERIALIZED (
      SELECT y.*, (count(*) OVER (PARTITION BY y.tenant, y.lane))::int AS k,
        (row_number() OVER (PARTITION BY y.tenant, y.lane ORDER BY y.run_id))::int AS rank
      FROM (SELECT ls.run_id, ls.tenant, ls.class, ls.kind, ${laneOf} AS lane FROM ls) y
    ),
    ${wfqTagCtes(sql`SELECT rq.tenant, rq.lane, max(rq.k)::int AS k, max(ut.weight) AS weight,
        max(${laneQueued('ut', sql`rq.lane`)}) = max(rq.k) AS fresh
      FROM rq JOIN ut ON ut.tenant = rq.tenant GROUP BY rq.tenant, rq.lane`)},
    q AS (
      INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
      SELECT rq.run_id, rq.tenant, rq.class, rq.lane, f.start_v + (f.n - (rq.k - rq.rank)) / ut.weight,
        ${nowMs}::bigint, rq.kind
      FROM rq JOIN ut ON ut.tenant = rq.tenant JOIN f ON f.tenant = rq.tenant AND f.lane = rq.lane
      ORDER BY rq.run_id
      RETURNING 1
    )`;
}
