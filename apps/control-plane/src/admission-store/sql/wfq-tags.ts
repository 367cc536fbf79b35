// The WFQ finish tags of new queue entries, as admission's kernel computes them (wfq.ts `Wfq.enqueue`):
// per (tenant, lane) the last tag is finishTag(start_v, n, weight) = start_v + n / weight; an entry restarts
// the lane at the lane's clock V when the tenant had no live (queued) entry left in that lane — the tags of
// cancelled entries are not banked against it — or when V > the last tag (then n = 1), else it counts on
// (n + 1). k entries of one lane at once: start_v as the first would leave it, n + k; entry j's tag
// start_v + (n − (k − j)) / weight — the same floats as k single steps (never a running sum).
import { LANE } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { QUEUED_COLUMN } from './rows.js';

type Fragment = ReturnType<typeof sql>;

/**
 * Two CTEs, `wfq_src` and `f` (comma-separated, no trailing comma): an upsert of adm_wfq for `source`, a
 * SELECT of (tenant text, lane int, k int — entries in that lane, weight float8, fresh boolean — the tenant
 * had no queued entry in that lane before these k: read from its locked tenant row's per-class counter).
 * `f` RETURNs tenant, lane, start_v, n (after the k entries).
 */
export function wfqTagCtes(source: Fragment): Fragment {
  // The fresh flag reaches ON CONFLICT through the CTE (EXCLUDED carries adm_wfq's columns only).
  const restart = sql`(EXCLUDED.start_v > w.start_v + w.n / (SELECT t.weight FROM adm_tenants t
            WHERE t.tenant = w.tenant) OR (SELECT s.fresh FROM wfq_src s WHERE s.tenant = w.tenant AND s.lane = w.lane))`;
  return sql`wfq_src AS MATERIALIZED (${source}),
    f AS (
      INSERT INTO adm_wfq AS w (tenant, lane, start_v, n)
      SELECT s.tenant, s.lane, (SELECT v FROM adm_vtime WHERE lane = s.lane), s.k FROM wfq_src s
      ON CONFLICT (tenant, lane) DO UPDATE
        SET start_v = CASE WHEN ${restart} THEN EXCLUDED.start_v ELSE w.start_v END,
          n = CASE WHEN ${restart} THEN 0 ELSE w.n END + EXCLUDED.n
      RETURNING w.tenant, w.lane, w.start_v, w.n
    )`;
}

/** The queued counter of lane `lane` (0–2) on a tenant row `t`: SQL over `t`, from admission's LANE and rows.ts QUEUED_COLUMN. */
export function laneQueued(t: string, lane: Fragment): Fragment {
  const arms = (Object.keys(LANE) as RunClass[]).map(
    (c) => sql`WHEN ${sql.lit(LANE[c])} THEN ${sql.ref(`${t}.${QUEUED_COLUMN[c]}`)}`,
  );
  return sql`CASE ${lane} ${sql.join(arms, sql` `)} END`;
}
