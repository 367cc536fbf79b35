// commitBatch: the task admissions of one or more tenants, each tenant's drawing on one envelope path (no
// slice, no causer), decided in order against one snapshot per tenant. Records and slots of all tenants in one
// statement each, then ONE hot statement per tenant for its K: the path's envelopes (`in_flight + k <= cap`),
// the tenant's queue cap (`queued + k <= max`), its WFQ finish tags per lane and the K queue entries. Lock
// order (settle-many.ts): with several tenants, all their envelopes are locked first by (tenant, id) in one
// sorted `FOR UPDATE`, then the hot statements run in that same tenant order (tenant rows by tenant, as
// PostgreSQL sorts them). Any guard short → 'raced' (the caller rolls back and decides one by one).
import type { AdmissionPlan } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { json } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';
import { LANE, slotRow } from './rows.js';

type Result = 'committed' | 'raced';

/** `groups`: one non-empty list of plans per tenant, each in decision order. */
export async function commitBatch(tx: Tx, groups: readonly (readonly AdmissionPlan[])[]): Promise<Result> {
  const plans = groups.flat();
  const k = plans.length;
  if (k === 0) return 'committed';
  const recorded = await tx
    .insertInto('adm_admissions')
    .values(
      plans.map((p) => ({
        tenant: p.slot.tenant,
        request_id: p.decision.requestId,
        run_id: p.slot.runId,
        decision: json(p.decision),
      })),
    )
    .onConflict((oc) => oc.columns(['tenant', 'request_id']).doNothing())
    .returning('request_id')
    .execute();
  if (recorded.length !== k) return 'raced';
  const inserted = await tx
    .insertInto('adm_slots')
    .values(plans.map((p) => slotRow(p.slot)))
    .onConflict((oc) => oc.columns(['tenant', 'run_id']).doNothing())
    .returning('run_id')
    .execute();
  if (inserted.length !== k) return 'raced';
  let ordered = groups.filter((g) => g.length > 0);
  if (ordered.length > 1) ordered = await lockEnvelopes(tx, ordered);
  for (const g of ordered) if ((await hotStatement(tx, g)) !== 'committed') return 'raced';
  return 'committed';
}

/** Locks every group's path envelopes by (tenant, id); returns the groups in PostgreSQL's tenant order. */
async function lockEnvelopes(tx: Tx, groups: readonly (readonly AdmissionPlan[])[]) {
  const tenants = groups.flatMap((g) => g[0]?.pathIds.map(() => g[0]?.slot.tenant ?? '') ?? []);
  const ids = groups.flatMap((g) => [...(g[0]?.pathIds ?? [])]);
  const locked = await sql<{ tenant: string }>`
    SELECT e.tenant FROM adm_envelopes e
    JOIN unnest(${tenants}::text[], ${ids}::text[]) AS p(tenant, id) ON e.tenant = p.tenant AND e.id = p.id
    ORDER BY e.tenant, e.id FOR UPDATE OF e`.execute(tx);
  const rank = new Map<string, number>();
  for (const r of locked.rows) if (!rank.has(r.tenant)) rank.set(r.tenant, rank.size);
  const at = (g: readonly AdmissionPlan[]) => rank.get(g[0]?.slot.tenant ?? '') ?? rank.size;
  return [...groups].sort((a, b) => at(a) - at(b));
}

async function hotStatement(tx: Tx, plans: readonly AdmissionPlan[]): Promise<Result> {
  const first = plans[0];
  if (!first) return 'committed';
  const tenant = first.slot.tenant;
  const k = plans.length;
  const envIds = [...first.pathIds];
  const usd = Math.max(...plans.map((p) => p.guards.estimate.usd));
  const tokens = Math.max(...plans.map((p) => p.guards.estimate.tokens));
  const max = first.guards.maxQueued;
  const byClass: Record<RunClass, number> = { interactive: 0, background: 0, batch: 0 };
  // Per lane: the entries in decision order; each gets the lane's finish tag minus its distance from the last.
  const perLane = new Map<number, number>();
  const rank: number[] = [];
  for (const p of plans) byClass[p.slot.class] += 1;
  for (const p of plans) {
    const lane = LANE[p.slot.class];
    perLane.set(lane, (perLane.get(lane) ?? 0) + 1);
    rank.push(perLane.get(lane) ?? 1);
  }
  const lanes = [...perLane.keys()];
  const counts = lanes.map((l) => perLane.get(l) ?? 0);
  const fromEnd = plans.map((p, i) => (perLane.get(LANE[p.slot.class]) ?? 0) - (rank[i] ?? 0));
  const hot = await sql<{ envs: string | number; queued: string | number }>`
    WITH env_lock AS MATERIALIZED (
      SELECT id FROM adm_envelopes WHERE tenant = ${tenant} AND id = ANY(${envIds}::text[])
      ORDER BY id FOR UPDATE
    ),
    env AS (
      UPDATE adm_envelopes SET in_flight = in_flight + ${k}::int, spent_runs = spent_runs + ${k}::int
      WHERE tenant = ${tenant} AND id IN (SELECT id FROM env_lock) AND in_flight + ${k}::int <= in_flight_cap
        AND (cap_usd IS NULL OR (spent_usd < cap_usd AND cap_usd - spent_usd >= ${usd}::float8))
        AND (cap_tokens IS NULL OR (spent_tokens < cap_tokens AND cap_tokens - spent_tokens >= ${tokens}::float8))
        AND (cap_runs IS NULL OR spent_runs + ${k}::int <= cap_runs)
      RETURNING id
    ),
    ten AS (
      UPDATE adm_tenants SET queued = queued + ${k}::int,
        queued_interactive = queued_interactive + ${byClass.interactive}::int,
        queued_background = queued_background + ${byClass.background}::int,
        queued_batch = queued_batch + ${byClass.batch}::int
      WHERE tenant = ${tenant} AND (${max}::int IS NULL OR queued + ${k}::int <= ${max}::int)
        AND (SELECT count(*) FROM env) = ${envIds.length}
      RETURNING weight
    ),
    f AS (
      INSERT INTO adm_wfq (tenant, lane, last_finish)
      SELECT ${tenant}, l.lane, (SELECT v FROM adm_vtime WHERE lane = l.lane) + l.k / ten.weight
      FROM ten, unnest(${lanes}::int[], ${counts}::int[]) AS l(lane, k)
      ON CONFLICT (tenant, lane) DO UPDATE
        SET last_finish = GREATEST(adm_wfq.last_finish, (SELECT v FROM adm_vtime WHERE lane = EXCLUDED.lane))
          + (EXCLUDED.last_finish - (SELECT v FROM adm_vtime WHERE lane = EXCLUDED.lane))
      RETURNING lane, last_finish
    ),
    q AS (
      INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
      SELECT e.run_id, ${tenant}, e.class, e.lane, f.last_finish - e.back / (SELECT weight FROM ten), e.at, e.kind
      FROM unnest(${plans.map((p) => p.slot.runId)}::text[], ${plans.map((p) => p.slot.class)}::text[],
        ${plans.map((p) => LANE[p.slot.class])}::int[], ${fromEnd}::float8[],
        ${plans.map((p) => p.slot.admittedAt)}::int8[], ${plans.map((p) => p.slot.kind)}::text[])
        WITH ORDINALITY AS e(run_id, class, lane, back, at, kind, ord)
      JOIN f ON f.lane = e.lane
      ORDER BY e.ord
      RETURNING run_id
    )
    SELECT (SELECT count(*) FROM env) AS envs, (SELECT count(*) FROM q) AS queued`.execute(tx);
  const row = hot.rows[0];
  if (!row || Number(row.envs) !== envIds.length || Number(row.queued) !== k) return 'raced';
  return 'committed';
}
