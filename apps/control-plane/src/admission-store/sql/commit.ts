// commitAdmission: record the decision, re-check every guard with conditional UPDATEs, count the run on its
// envelope path, bump the causer, insert the slot, enqueue. Lock order (all steps): causer run row (the
// caller) → causer slot → envelopes (by id, locked by a sorted `FOR UPDATE` before they are updated) →
// tenant row → WFQ row → global row: the global order settle and claim take them in (admission-store/sql/settle.ts).
import { type AdmissionPlan, type Admitted, type CommitResult, LANE } from '@everdict/admission';
import { sql } from 'kysely';
import { json } from '../../db/numeric.js';
import type { Tx } from '../../db/tx.js';
import { usdHeadroom } from './budget.js';
import { envelopeReleases } from './released.js';
import { envelopeRow, isRecordedRequest, QUEUED_COLUMN, slotRow } from './rows.js';
import { abort } from './scope.js';
import { wfqTagCtes } from './wfq-tags.js';

const RACED: CommitResult = { status: 'raced' };

export async function commitPlan(tx: Tx, plan: AdmissionPlan): Promise<CommitResult> {
  const { decision, slot, guards } = plan;
  const tenant = slot.tenant;

  const recorded = !isRecordedRequest(plan)
    ? { request_id: decision.requestId }
    : await tx
        .insertInto('adm_admissions')
        .values({ tenant, request_id: decision.requestId, run_id: slot.runId, decision: json(decision) })
        .onConflict((oc) => oc.columns(['tenant', 'request_id']).doNothing())
        .returning('request_id')
        .executeTakeFirst();
  if (!recorded) {
    const prior = await tx
      .selectFrom('adm_admissions')
      .select('decision')
      .where('tenant', '=', tenant)
      .where('request_id', '=', decision.requestId)
      .executeTakeFirstOrThrow();
    return abort<CommitResult>({ status: 'duplicate', decision: prior.decision as unknown as Admitted });
  }

  const inserted = await tx
    .insertInto('adm_slots')
    .values(slotRow(slot))
    .onConflict((oc) => oc.columns(['tenant', 'run_id']).doNothing())
    .returning('run_id')
    .executeTakeFirst();
  if (!inserted) return abort<CommitResult>({ status: 'run_exists' });

  if (plan.slice) {
    const created = await tx
      .insertInto('adm_envelopes')
      .values(envelopeRow(plan.slice))
      .onConflict((oc) => oc.columns(['tenant', 'id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!created) return abort<CommitResult>({ status: 'slice_exists' });
  }

  if (slot.causedByRunId !== null) {
    const max = guards.maxChildren;
    const r = await sql`UPDATE adm_slots SET children = children + 1
      WHERE tenant = ${tenant} AND run_id = ${slot.causedByRunId} AND (${max}::int IS NULL OR children < ${max}::int)`.execute(
      tx,
    );
    if (Number(r.numAffectedRows ?? 0n) !== 1) return abort(RACED);
  }

  const { usd, tokens } = guards.estimate;
  const envIds = plan.slice ? [plan.slice.id, ...plan.pathIds] : plan.pathIds;
  // The path's rows are locked in id order first (an UPDATE alone locks in scan order), then guarded.
  // In flight and spend are the main row's less/plus what settles released (released.ts).
  const envelopeLock = sql`env_lock AS MATERIALIZED (
      SELECT tenant, id FROM adm_envelopes WHERE tenant = ${tenant} AND id = ANY(${envIds}::text[])
      ORDER BY id FOR UPDATE
    ),
    rel AS MATERIALIZED (${envelopeReleases('env_lock')})`;
  const envelopeGuard = sql`UPDATE adm_envelopes e SET in_flight = e.in_flight + 1, spent_runs = e.spent_runs + 1
      FROM rel r
      WHERE e.tenant = ${tenant} AND r.tenant = e.tenant AND r.id = e.id AND GREATEST(e.in_flight - r.n, 0) < e.in_flight_cap
        AND ${usdHeadroom(sql`e.cap_usd`, sql`e.spent_usd + r.usd`, sql`${usd}::float8`)}
        AND (e.cap_tokens IS NULL OR (e.spent_tokens + r.tokens < e.cap_tokens
          AND e.cap_tokens - (e.spent_tokens + r.tokens) >= ${tokens}::float8))
        AND (e.cap_runs IS NULL OR e.spent_runs + 1 <= e.cap_runs)
      RETURNING e.id`;

  if (slot.lifetime === 'session') {
    const e = await sql`WITH ${envelopeLock} ${envelopeGuard}`.execute(tx);
    if (e.rows.length !== envIds.length) return abort(RACED);
    const pools = guards.sessionPools;
    if (!pools) return abort(RACED);
    const m = slot.member ? 1 : 0;
    const t =
      await sql`UPDATE adm_tenants SET sessions = sessions + 1, member_sessions = member_sessions + ${m}::int
      WHERE tenant = ${tenant} AND sessions < ${pools.tenant.maxSessions}::int
        AND (${slot.member}::boolean OR sessions - member_sessions < ${pools.tenant.maxSessions - pools.tenant.memberReserve}::int)`.execute(
        tx,
      );
    if (Number(t.numAffectedRows ?? 0n) !== 1) return abort(RACED);
    const g =
      await sql`UPDATE adm_global SET sessions = sessions + 1, member_sessions = member_sessions + ${m}::int
      WHERE id = 1 AND sessions < ${pools.global.maxSessions}::int
        AND (${slot.member}::boolean OR sessions - member_sessions < ${pools.global.maxSessions - pools.global.memberReserve}::int)`.execute(
        tx,
      );
    if (Number(g.numAffectedRows ?? 0n) !== 1) {
      // The global row may not exist yet (putGlobal never called): create it once.
      const made = await tx
        .insertInto('adm_global')
        .values({ id: 1, policy: json({}), sessions: 1, member_sessions: m })
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (!made || pools.global.maxSessions < 1) return abort(RACED);
    }
    return { status: 'committed', decision };
  }

  // Task: envelopes (every one on the path), then the tenant's queue cap; a partial envelope match leaves
  // the tenant untouched and the caller rolls back (savepoint, or its whole transaction).
  const col = sql.ref(QUEUED_COLUMN[slot.class]);
  const max = guards.maxQueued;
  const lane = LANE[slot.class];
  // The hot rows last, in ONE statement: envelopes, the tenant's queue cap, its WFQ finish tag and the queue
  // entry; the caller commits right after, so the locks are held for this statement and the commit only.
  const hot = await sql<{ envs: string | number; queued: string | number }>`
    WITH ${envelopeLock},
    env AS (${envelopeGuard}),
    ten AS (
      UPDATE adm_tenants SET queued = queued + 1, ${col} = ${col} + 1
      WHERE tenant = ${tenant} AND (${max}::int IS NULL OR queued < ${max}::int)
        AND (SELECT count(*) FROM env) = ${envIds.length}
      RETURNING weight, ${col} AS lane_queued
    ),
    ${wfqTagCtes(sql`SELECT ${tenant}::text AS tenant, ${lane}::int AS lane, 1 AS k, ten.weight, ten.lane_queued = 1 AS fresh FROM ten`)},
    q AS (
      INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
      SELECT ${slot.runId}, ${tenant}, ${slot.class}, ${lane}, f.start_v + f.n / ten.weight, ${slot.admittedAt}, ${slot.kind}
      FROM f, ten
      RETURNING run_id
    )
    SELECT (SELECT count(*) FROM env) AS envs, (SELECT count(*) FROM q) AS queued`.execute(tx);
  const row = hot.rows[0];
  if (!row || Number(row.envs) !== envIds.length || Number(row.queued) !== 1) return abort(RACED);
  return { status: 'committed', decision };
}
