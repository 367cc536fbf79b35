// The WFQ finish tags of new queue entries, as admission's kernel computes them (wfq.ts `Wfq.enqueue`):
// per (tenant, lane) the last tag is finishTag(start_v, n, weight) = start_v + n / weight; an entry restarts
// the lane at the lane's clock V when V > the last tag (then n = 1), else it counts on (n + 1). k entries
// of one lane at once: start_v as the first would leave it, n + k; entry j's tag start_v + (n − (k − j)) /
// weight — the same floats as k single steps (never a running sum).
import { sql } from 'kysely';

type Fragment = ReturnType<typeof sql>;

/**
 * An upsert of adm_wfq for `source`: a SELECT of (tenant text, lane int, k int — entries in that lane,
 * weight float8). RETURNING tenant, lane, start_v, n (after the k entries).
 */
export function wfqTagUpsert(source: Fragment): Fragment {
  return sql`
      INSERT INTO adm_wfq AS w (tenant, lane, start_v, n)
      SELECT s.tenant, s.lane, (SELECT v FROM adm_vtime WHERE lane = s.lane), s.k FROM (${source}) s
      ON CONFLICT (tenant, lane) DO UPDATE
        SET start_v = CASE WHEN EXCLUDED.start_v > w.start_v + w.n / (SELECT t.weight FROM adm_tenants t
            WHERE t.tenant = w.tenant) THEN EXCLUDED.start_v ELSE w.start_v END,
          n = CASE WHEN EXCLUDED.start_v > w.start_v + w.n / (SELECT t.weight FROM adm_tenants t
            WHERE t.tenant = w.tenant) THEN 0 ELSE w.n END + EXCLUDED.n
      RETURNING w.tenant, w.lane, w.start_v, w.n`;
}
