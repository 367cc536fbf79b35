// settleMany's admission half: settle K slots and release their counters as CTEs of the caller's ONE
// statement (batch-transitions.settleMany writes the run rows, record and facts in the same statement).
// Each slot becomes terminal exactly once (a slot already terminal is skipped under its row lock); every
// envelope path is charged and its in-flight released; tenant and global counters are freed.
//
// Lock order (the one every transaction of the control plane follows, so two replicas cannot deadlock):
// runs (by id) → slots (by tenant, run_id) → envelopes (by tenant, id) → tenant rows (by tenant) → the global
// row. What a settle releases — in flight and spend on the envelope path, the tenant's running count — is added
// to the settling connection's stripe of the released rows (released.ts, migration 0021), never to the envelope
// and tenant rows creates and claims lock: a settle holds no row a create or a claim waits on through its
// commit's WAL flush. Only a queued run's settle (the tenant's queued counts) and a session's (its pools)
// still lock the tenant row (then the global row). Order: slots → tenant rows → envelope releases → tenant
// releases → the global row. An UPDATE … FROM takes its row locks in whatever order the join yields them, so each set is first
// locked by a MATERIALIZED `SELECT … ORDER BY … FOR UPDATE` (the lock is taken above the sort, so in order),
// and each set's lock waits for the previous set through a one-time filter (`WHERE (SELECT count(*) FROM
// prev) >= 0`, an InitPlan evaluated before the scan starts). The hot rows (envelopes, tenants, global) come
// last, so they are held only for the rest of this statement and its commit.
//
// Spend is kept to admission's MAX_USD (budget.ts `boundedUsd`): each run's usd, each envelope's sum and each
// released row's total saturate there — the kernel counts any spend past it as MAX_USD — so no number of
// settles can overflow float8 on the settle's write, the fold, or a reader's sum.
//
// A release wakes the claimers: when a tenant whose running count this settle lowers still has queued runs
// (they may have waited on its `max_concurrent`), `ss_wake` gives the payload of a NOTIFY on the dispatch
// channel — RELEASED_PAYLOAD, plus INLINE_ONLY_NOTE when only inline-lane kinds are queued (the runners'
// long-polls stay asleep) or RUNNERS_ONLY_NOTE when none is (the dispatch loops do). Every replica's claimers
// then claim at once instead of at their next poll: no create happened, so nothing else would wake them. A
// CTE nobody reads is not run, so the caller's final SELECT reads SETTLE_WAKE_SQL (settleMany NOTIFYs after
// its commit, off the WAL flush) or RELEASE_WAKE_NOTIFY_SQL (settleSlots: in the caller's transaction,
// delivered at its commit).
import { type Settlement, type SettleResult, settleRefusal } from '@everdict/admission';
import { KNOWN_RUN_KINDS, TERMINAL_STATUSES } from '@everdict/run-model';
import { sql } from 'kysely';
import type { Tx } from '../../db/tx.js';
import {
  DISPATCH_CHANNEL,
  INLINE_LANE_KINDS,
  INLINE_ONLY_NOTE,
  RELEASED_PAYLOAD,
  RUNNERS_ONLY_NOTE,
} from '../../services/context.js';
import { boundedUsd } from './budget.js';
import { STRIPE_SQL } from './released.js';
import { slotOf } from './rows.js';

/**
 * The CTEs (`ss_old`, …, `ss_global`) settling the slots listed by `source`: a SELECT of (tenant text,
 * run_id text, status text — succeeded|failed|cancelled, usd float8, tokens float8). The caller must gate
 * `source` behind any lock it takes earlier in the order (runs), and open its statement with WITH RECURSIVE
 * (the envelope path is a recursive walk). `ss_old` lists the slots settled here.
 */
export function settleSlotsCtes(source: ReturnType<typeof sql>) {
  return sql`
    ss_in AS MATERIALIZED (${source}),
    ss_old AS MATERIALIZED (
      SELECT s.tenant, s.run_id, s.status, s.class, s.lifetime, s.member, s.envelope_id,
        i.status AS next, ${boundedUsd(sql`COALESCE(i.usd, 0)`)} AS usd, i.tokens
      FROM adm_slots s JOIN ss_in i ON s.tenant = i.tenant AND s.run_id = i.run_id
      WHERE s.status NOT IN (${sql.join(TERMINAL_STATUSES.map((t) => sql.lit(t)))})
        AND NOT (s.status = 'queued' AND i.status = 'succeeded')
      ORDER BY s.tenant, s.run_id
      FOR UPDATE OF s
    ),
    ss_slots AS (
      UPDATE adm_slots s SET status = o.next FROM ss_old o
      WHERE s.tenant = o.tenant AND s.run_id = o.run_id RETURNING 1
    ),
    ss_dequeue AS (
      DELETE FROM adm_queue q USING ss_old o
      WHERE o.status = 'queued' AND q.tenant = o.tenant AND q.run_id = o.run_id RETURNING 1
    ),
    ss_path(tenant, id, parent_id, usd, tokens, n, depth) AS (
      SELECT e.tenant, e.id, e.parent_id, o.usd, o.tokens, 1, 0
      FROM adm_envelopes e JOIN ss_old o ON e.tenant = o.tenant AND e.id = o.envelope_id
      UNION ALL
      SELECT e.tenant, e.id, e.parent_id, p.usd, p.tokens, p.n, p.depth + 1
      FROM adm_envelopes e JOIN ss_path p ON e.tenant = p.tenant AND e.id = p.parent_id WHERE p.depth < 64
    ),
    ss_agg AS MATERIALIZED (
      SELECT tenant, id, ${boundedUsd(sql`sum(usd)`)} AS usd, sum(tokens) AS tokens, sum(n)::int AS n
      FROM ss_path GROUP BY tenant, id
    ),
    ss_delta AS MATERIALIZED (
      SELECT tenant,
        (count(*) FILTER (WHERE status <> 'queued' AND lifetime <> 'session'))::int AS running,
        (count(*) FILTER (WHERE status = 'queued' AND class = 'interactive'))::int AS qi,
        (count(*) FILTER (WHERE status = 'queued' AND class = 'background'))::int AS qb,
        (count(*) FILTER (WHERE status = 'queued' AND class = 'batch'))::int AS qh,
        (count(*) FILTER (WHERE status <> 'queued' AND lifetime = 'session'))::int AS sessions,
        (count(*) FILTER (WHERE status <> 'queued' AND lifetime = 'session' AND member))::int AS members
      FROM ss_old GROUP BY tenant
    ),
    ss_ten_lock AS MATERIALIZED (
      SELECT a.tenant FROM adm_tenants a JOIN ss_delta t ON a.tenant = t.tenant
      WHERE (SELECT count(*) FROM ss_old) >= 0 AND t.qi + t.qb + t.qh + t.sessions > 0
      ORDER BY a.tenant
      FOR UPDATE OF a
    ),
    ss_ten AS (
      UPDATE adm_tenants a SET queued = a.queued - (t.qi + t.qb + t.qh),
        queued_interactive = a.queued_interactive - t.qi, queued_background = a.queued_background - t.qb,
        queued_batch = a.queued_batch - t.qh, sessions = a.sessions - t.sessions,
        member_sessions = a.member_sessions - t.members
      FROM ss_delta t JOIN ss_ten_lock l ON l.tenant = t.tenant WHERE a.tenant = t.tenant RETURNING 1
    ),
    ss_env AS (
      INSERT INTO adm_envelope_releases AS x (tenant, id, stripe, in_flight, spent_usd, spent_tokens)
      SELECT a.tenant, a.id, ${STRIPE_SQL}, a.n, a.usd, a.tokens FROM ss_agg a
      WHERE (SELECT count(*) FROM ss_ten) >= 0
      ORDER BY a.tenant, a.id
      ON CONFLICT (tenant, id, stripe) DO UPDATE SET in_flight = x.in_flight + EXCLUDED.in_flight,
        spent_usd = ${boundedUsd(sql`${boundedUsd(sql`x.spent_usd`)} + EXCLUDED.spent_usd`)},
        spent_tokens = x.spent_tokens + EXCLUDED.spent_tokens
      RETURNING 1
    ),
    ss_ten_rel AS (
      INSERT INTO adm_tenant_releases AS x (tenant, stripe, running)
      SELECT t.tenant, ${STRIPE_SQL}, t.running FROM ss_delta t
      WHERE t.running > 0 AND (SELECT count(*) FROM ss_env) >= 0
      ORDER BY t.tenant
      ON CONFLICT (tenant, stripe) DO UPDATE SET running = x.running + EXCLUDED.running
      RETURNING 1
    ),
    ss_global AS (
      UPDATE adm_global g SET sessions = GREATEST(g.sessions - d.sessions, 0),
        member_sessions = GREATEST(g.member_sessions - d.members, 0)
      FROM (SELECT sum(sessions)::int AS sessions, sum(members)::int AS members FROM ss_delta) d
      WHERE g.id = 1 AND d.sessions > 0 AND (SELECT count(*) FROM ss_ten_rel) >= 0 RETURNING 1
    ),
    ss_wake_lanes AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM adm_queue q WHERE q.kind IN (${INLINE_KINDS_SQL}) AND q.tenant = a.tenant) AS inline,
        EXISTS (SELECT 1 FROM adm_queue q WHERE q.kind IN (${RUNNER_KINDS_SQL}) AND q.tenant = a.tenant) AS runners
      FROM adm_tenants a JOIN ss_delta d ON a.tenant = d.tenant
      WHERE d.running > 0 AND a.queued > 0
    ),
    ss_wake AS (
      SELECT CASE WHEN bool_or(inline) AND bool_or(runners) THEN ${RELEASED_PAYLOAD}::text
        WHEN bool_or(inline) THEN ${`${RELEASED_PAYLOAD}${INLINE_ONLY_NOTE}`}::text
        WHEN bool_or(runners) THEN ${`${RELEASED_PAYLOAD}${RUNNERS_ONLY_NOTE}`}::text END AS payload
      FROM ss_wake_lanes
    )`;
}

// The kinds a released tenant's queue is probed for, as literals (the planner sees them: a kind absent from the
// queue is an empty scan of the (kind, …) index, whatever the tenant's queue holds).
const literals = (kinds: Iterable<string>) => sql.join([...kinds].map((k) => sql.lit(k)));
const INLINE_KINDS_SQL = literals(INLINE_LANE_KINDS);
const RUNNER_KINDS_SQL = literals(KNOWN_RUN_KINDS.filter((k) => !INLINE_LANE_KINDS.has(k)));

/**
 * A SELECT expression over settleSlotsCtes' CTEs: the release wake's NOTIFY payload on the dispatch channel,
 * or NULL when no claimer is to be woken (see the header).
 */
export const SETTLE_WAKE_SQL = sql`(SELECT payload FROM ss_wake)`;

/**
 * A SELECT expression over settleSlotsCtes' CTEs that NOTIFYs the release wake in the caller's transaction
 * (delivered at its commit) when the settle released a tenant with queued runs — settleOne's and settleSlots'.
 */
export const RELEASE_WAKE_NOTIFY_SQL = sql`(SELECT pg_notify(${DISPATCH_CHANNEL}, payload) FROM ss_wake WHERE payload IS NOT NULL)`;

/** A slot to settle with `settleSlots` (the run's terminal status and what it spent). */
export interface SlotSettlement {
  readonly tenant: string;
  readonly runId: string;
  readonly status: 'succeeded' | 'failed' | 'cancelled';
  readonly usd: number;
  readonly tokens: number;
}

/**
 * Settles slots in ONE statement (the CTEs above, no savepoint, no separate slot read), for a caller that
 * has locked the runs already and does not need to know whether each slot settled: a slot already terminal
 * (or queued, asked to succeed) is skipped under its row lock — `settleRefusal`'s rule without `ifStatus`.
 * A run listed twice settles once.
 */
export async function settleSlots(tx: Tx, items: readonly SlotSettlement[]): Promise<void> {
  if (items.length === 0) return;
  // Inside the caller's transaction, as settleOne: the release wake is delivered at its commit.
  await sql`WITH RECURSIVE ${settleSlotsCtes(slotSettlementSource(items))}
    SELECT (SELECT count(*) FROM ss_old) AS n, ${RELEASE_WAKE_NOTIFY_SQL} AS woke`.execute(tx);
}

/** `settleSlotsCtes`' source for `items` (a run listed twice once), for a statement of the caller's. */
export function slotSettlementSource(items: readonly SlotSettlement[]) {
  return sql`SELECT DISTINCT ON (tenant, run_id) tenant, run_id, status, usd, tokens
    FROM unnest(${items.map((i) => i.tenant)}::text[], ${items.map((i) => i.runId)}::text[],
      ${items.map((i) => i.status)}::text[], ${items.map((i) => i.usd)}::float8[],
      ${items.map((i) => i.tokens)}::float8[]) AS x(tenant, run_id, status, usd, tokens)
    ORDER BY tenant, run_id`;
}

/**
 * The admission store's `settle`: settle-many of one (the same CTEs), after admission's one settle rule
 * (`settleRefusal`) read on the slot row locked here. Lock order: slot → envelopes → tenant → global.
 */
export async function settleOne(tx: Tx, s: Settlement): Promise<SettleResult> {
  const row = await tx
    .selectFrom('adm_slots')
    .selectAll()
    .where('tenant', '=', s.tenant)
    .where('run_id', '=', s.runId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) return { settled: false, reason: 'unknown_run' };
  const slot = slotOf(row);
  const refused = settleRefusal(slot.status, s);
  if (refused !== null) return { settled: false, reason: refused };
  // The same one statement as settleSlots' (its release wake delivered at the caller's commit).
  await settleSlots(tx, [
    { tenant: s.tenant, runId: s.runId, status: s.status, usd: s.actuals.usd, tokens: s.actuals.tokens },
  ]);
  return { settled: true, from: slot.status, slot: { ...slot, status: s.status } };
}
