// commitBatch: the task admissions of one or more tenants — each tenant's K drawing on its root envelope path
// (no slice, no causer), decided in order against one snapshot per tenant — written in ONE autocommit
// statement, together with the caller's "riders" (the ledger's run rows and facts):
//   1. the admission records (callers' request ids; an auto one is not recorded — rows.ts), the slots and every rider — plain inserts, no existing row locked;
//   2. the hot rows, last: every tenant's path envelopes locked in (tenant, id) order and charged
//      (`in_flight + k <= cap`, budget left; in flight and spend less/plus what settles released — released.ts), then the tenant rows locked in tenant order and their queue cap
//      taken (`queued + k <= max`), the WFQ finish tags per (tenant, lane) and the K queue entries;
//   3. `everdict_assert` over every count: a guard short anywhere (a cross-replica race, a request id
//      admitted meanwhile) raises EV001 and the whole statement — riders included — rolls back ('raced';
//      the caller decides one by one).
// Lock order is the one every transaction follows (admission-store/sql/settle.ts): envelopes by (tenant, id) → tenant rows
// by tenant. Sub-statements run in the order the final SELECT first reads them (left to right), so the
// inserts go first and the hot rows are held only for the tail of the statement and its commit.
import { type AdmissionPlan, LANE } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { ASSERT_SQLSTATE } from '../../db/migrations/0005_assert.js';
import { json } from '../../db/numeric.js';
import { prepared } from '../../db/prepared.js';
import { type Executor, isRetryable } from '../../db/tx.js';
import { usdHeadroom } from './budget.js';
import { envelopeReleases } from './released.js';
import { isRecordedRequest, slotRow } from './rows.js';
import { laneQueued, wfqTagCtes } from './wfq-tags.js';

/** A write carried by the admission statement: a data-modifying query that must touch exactly `rows` rows. */
export interface Rider {
  name: string;
  /** A kysely query builder or `sql` fragment with a RETURNING clause. */
  query: unknown;
  rows: number;
}

export type BatchResult<R> = { committed: R[] } | 'raced';

const isAssertFailure = (e: unknown): boolean =>
  typeof e === 'object' && e !== null && 'code' in e && (e as { code: unknown }).code === ASSERT_SQLSTATE;

/**
 * `groups`: one non-empty list of plans per tenant, each in decision order. `yieldFrom` names the rider whose
 * RETURNING rows the statement returns. `notify`: channels to NOTIFY (delivered at commit), each with an
 * optional payload (`[channel, payload]`).
 */
export async function commitBatch<R>(
  ex: Executor,
  groups: readonly (readonly AdmissionPlan[])[],
  riders: readonly Rider[],
  yieldFrom: string,
  notify: readonly (string | readonly [string, string])[] = [],
): Promise<BatchResult<R>> {
  const plans = groups.flat();
  const k = plans.length;
  const hot = hotInputs(groups.filter((g) => g.length > 0));
  const admissions = plans.filter(isRecordedRequest).map((p) => ({
    tenant: p.slot.tenant,
    request_id: p.decision.requestId,
    run_id: p.slot.runId,
    decision: p.decision,
  }));
  const riderCtes = riders.map((r) => sql`${sql.id(r.name)} AS (${r.query})`);
  const riderCounts = [
    sql`TRUE`,
    ...riders.map((r) => sql`(SELECT count(*) FROM ${sql.id(r.name)}) = ${r.rows}`),
  ];
  const notifies = notify.map((n) =>
    typeof n === 'string' ? sql`pg_notify(${n}, '')` : sql`pg_notify(${n[0]}, ${n[1]})`,
  );
  const statement = sql<R>`${sql.raw(prepared('create_write'))}
    WITH adm AS (
      INSERT INTO adm_admissions (tenant, request_id, run_id, decision)
      SELECT x.tenant, x.request_id, x.run_id, x.decision
      FROM jsonb_to_recordset(${json(admissions)}::jsonb) AS x(tenant text, request_id text, run_id text, decision jsonb)
      ON CONFLICT (tenant, request_id) DO NOTHING RETURNING 1
    ),
    slots AS (
      INSERT INTO adm_slots (run_id, tenant, kind, cause, class, lifetime, status, caused_by_run_id, depth,
        children, envelope_id, member, agent_id, expected_duration_ms, admitted_at, started_at)
      SELECT x.run_id, x.tenant, x.kind, x.cause, x.class, x.lifetime, x.status, x.caused_by_run_id, x.depth,
        x.children, x.envelope_id, x.member, x.agent_id, x.expected_duration_ms, x.admitted_at, x.started_at
      FROM jsonb_to_recordset(${json(plans.map((p) => slotRow(p.slot)))}::jsonb) AS x(run_id text, tenant text,
        kind text, cause text, class text, lifetime text, status text, caused_by_run_id text, depth int,
        children int, envelope_id text, member boolean, agent_id text, expected_duration_ms bigint,
        admitted_at bigint, started_at bigint)
      ON CONFLICT (tenant, run_id) DO NOTHING RETURNING 1
    ),
    ${riders.length > 0 ? sql`${sql.join(riderCtes)},` : sql``}
    n AS (SELECT ${notifies.length > 0 ? sql.join(notifies) : sql`1`}),
    d AS (SELECT * FROM jsonb_to_recordset(${json(hot.envelopes)}::jsonb)
      AS d(tenant text, id text, k int, usd float8, tokens float8)),
    t AS (SELECT * FROM jsonb_to_recordset(${json(hot.tenants)}::jsonb)
      AS t(tenant text, k int, max int, qi int, qb int, qh int, npath int)),
    env_lock AS MATERIALIZED (
      SELECT e.tenant, e.id FROM adm_envelopes e JOIN d ON e.tenant = d.tenant AND e.id = d.id
      ORDER BY e.tenant, e.id FOR UPDATE OF e
    ),
    rel AS MATERIALIZED (${envelopeReleases('env_lock')}),
    env AS (
      UPDATE adm_envelopes e SET in_flight = e.in_flight + d.k, spent_runs = e.spent_runs + d.k
      FROM d JOIN env_lock l ON l.tenant = d.tenant AND l.id = d.id JOIN rel r ON r.tenant = d.tenant AND r.id = d.id
      WHERE e.tenant = d.tenant AND e.id = d.id AND GREATEST(e.in_flight - r.n, 0) + d.k <= e.in_flight_cap
        AND ${usdHeadroom(sql`e.cap_usd`, sql`e.spent_usd + r.usd`, sql`d.usd`)}
        AND (e.cap_tokens IS NULL OR (e.spent_tokens + r.tokens < e.cap_tokens
          AND e.cap_tokens - (e.spent_tokens + r.tokens) >= d.tokens))
        AND (e.cap_runs IS NULL OR e.spent_runs + d.k <= e.cap_runs)
      RETURNING e.tenant
    ),
    env_ok AS (SELECT tenant, count(*) AS n FROM env GROUP BY tenant),
    ten_lock AS MATERIALIZED (
      SELECT a.tenant FROM adm_tenants a JOIN t ON a.tenant = t.tenant
      WHERE (SELECT count(*) FROM env_ok) >= 0
      ORDER BY a.tenant FOR UPDATE OF a
    ),
    ten AS (
      UPDATE adm_tenants a SET queued = a.queued + t.k, queued_interactive = a.queued_interactive + t.qi,
        queued_background = a.queued_background + t.qb, queued_batch = a.queued_batch + t.qh
      FROM t JOIN ten_lock l ON l.tenant = t.tenant JOIN env_ok o ON o.tenant = t.tenant
      WHERE a.tenant = t.tenant AND (t.max IS NULL OR a.queued + t.k <= t.max) AND o.n = t.npath
      RETURNING a.tenant, a.weight, a.queued_interactive, a.queued_background, a.queued_batch
    ),
    ${wfqTagCtes(sql`SELECT l.tenant, l.lane, l.k, ten.weight, ${laneQueued('ten', sql`l.lane`)} = l.k AS fresh
      FROM jsonb_to_recordset(${json(hot.lanes)}::jsonb) AS l(tenant text, lane int, k int)
      JOIN ten ON ten.tenant = l.tenant`)},
    q AS (
      INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
      SELECT e.run_id, e.tenant, e.class, e.lane, f.start_v + (f.n - e.back) / ten.weight, e.at, e.kind
      FROM jsonb_to_recordset(${json(hot.entries)}::jsonb)
        AS e(ord int, run_id text, tenant text, class text, lane int, back int, at bigint, kind text)
      JOIN ten ON ten.tenant = e.tenant JOIN f ON f.tenant = e.tenant AND f.lane = e.lane
      ORDER BY e.ord
      RETURNING run_id
    ),
    chk AS (
      SELECT everdict_assert(
        (SELECT count(*) FROM adm) = ${admissions.length} AND (SELECT count(*) FROM slots) = ${k}
          AND ${sql.join(riderCounts, sql` AND `)} AND (SELECT count(*) FROM n) = 1
          AND (SELECT count(*) FROM env) = ${hot.envelopes.length} AND (SELECT count(*) FROM ten) = ${hot.tenants.length}
          AND (SELECT count(*) FROM q) = ${k},
        'admission raced') AS ok
    )
    SELECT y.* FROM ${sql.id(yieldFrom)} y WHERE (SELECT ok FROM chk)`;
  try {
    const { rows } = await statement.execute(ex);
    return { committed: rows };
  } catch (e) {
    // A guard short, or a deadlock with a writer that locked in another order (two replicas inserting the same
    // request ids): nothing was written; the caller decides again one by one.
    if (isAssertFailure(e) || isRetryable(e)) return 'raced';
    throw e;
  }
}

/** What the batch statement carries: a task drawing on its tenant's root path (no slice, causer or agent). */
export function isBatchable(plan: AdmissionPlan): boolean {
  return (
    plan.slot.lifetime === 'task' &&
    plan.slot.causedByRunId === null &&
    plan.slice === null &&
    plan.slot.agentId === null
  );
}

/** The hot statement's inputs: per envelope, per tenant, per (tenant, lane), per queue entry. */
function hotInputs(groups: readonly (readonly AdmissionPlan[])[]) {
  const envelopes: { tenant: string; id: string; k: number; usd: number; tokens: number }[] = [];
  const tenants: {
    tenant: string;
    k: number;
    max: number | null;
    qi: number;
    qb: number;
    qh: number;
    npath: number;
  }[] = [];
  const lanes: { tenant: string; lane: number; k: number }[] = [];
  const entries: {
    ord: number;
    run_id: string;
    tenant: string;
    class: string;
    lane: number;
    back: number;
    at: number;
    kind: string;
  }[] = [];
  for (const plans of groups) {
    const first = plans[0];
    if (!first) continue;
    const tenant = first.slot.tenant;
    const k = plans.length;
    const usd = Math.max(...plans.map((p) => p.guards.estimate.usd));
    const tokens = Math.max(...plans.map((p) => p.guards.estimate.tokens));
    for (const id of first.pathIds) envelopes.push({ tenant, id, k, usd, tokens });
    const byClass: Record<RunClass, number> = { interactive: 0, background: 0, batch: 0 };
    for (const p of plans) byClass[p.slot.class] += 1;
    tenants.push({
      tenant,
      k,
      max: first.guards.maxQueued ?? null,
      qi: byClass.interactive,
      qb: byClass.background,
      qh: byClass.batch,
      npath: first.pathIds.length,
    });
    // Per lane: entries in decision order; each gets the lane's new finish tag minus its distance from the last.
    const perLane = new Map<number, number>();
    for (const p of plans) perLane.set(LANE[p.slot.class], (perLane.get(LANE[p.slot.class]) ?? 0) + 1);
    for (const [lane, n] of perLane) lanes.push({ tenant, lane, k: n });
    const seen = new Map<number, number>();
    for (const p of plans) {
      const lane = LANE[p.slot.class];
      const rank = (seen.get(lane) ?? 0) + 1;
      seen.set(lane, rank);
      entries.push({
        ord: entries.length,
        run_id: p.slot.runId,
        tenant,
        class: p.slot.class,
        lane,
        back: (perLane.get(lane) ?? 0) - rank,
        at: p.slot.admittedAt,
        kind: p.slot.kind,
      });
    }
  }
  return { envelopes, tenants, lanes, entries };
}

/** Used by the one-by-one path and tests: is this the combined statement's race signal? */
export { isAssertFailure };
