// settleMany: the batched form of settle for K runs in ONE transaction (the inline executor settles whatever
// finished while the previous batch committed). Phase 1 locks and marks the slots (exactly once: a slot
// already terminal is skipped under its row lock); phase 2 — the hot rows, taken LAST so they are held only
// for one statement and the commit — charges every envelope path and frees tenant/global counters.
//
// Lock order (the one every transaction of the control plane follows, so two replicas cannot deadlock):
// runs (by id) → slots (by tenant, run_id) → envelopes (by tenant, id) → tenant rows (by tenant) → the global
// row. An UPDATE … FROM takes its row locks in whatever order the join yields them, so each hot set is first
// locked by a MATERIALIZED `SELECT … ORDER BY … FOR UPDATE`, and the next set's lock waits for the previous
// set's update (an InitPlan gate) — still ONE statement.
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { json } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';

export interface SettleItem {
  tenant: string;
  runId: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  actuals: { usd: number; tokens: number };
}

interface TenantDelta {
  tenant: string;
  running: number;
  qi: number;
  qb: number;
  qh: number;
  sessions: number;
  members: number;
}

/** What phase 2 must release: one entry per settled slot's envelope, per-tenant counter deltas. */
export interface SettleCounters {
  envelopes: { tenant: string; env: string; usd: number; tokens: number; n: number }[];
  tenants: TenantDelta[];
  globalSessions: number;
  globalMembers: number;
}

interface OldSlot {
  tenant: string;
  run_id: string;
  status: string;
  class: string;
  lifetime: string;
  member: boolean;
  envelope_id: string;
}

const QUEUED_KEY: Record<RunClass, 'qi' | 'qb' | 'qh'> = { interactive: 'qi', background: 'qb', batch: 'qh' };

/** Phase 1: lock + mark the slots terminal (and drop queue entries of queued ones). Returns the settled ids. */
export async function settleSlotsMany(
  tx: Tx,
  items: readonly SettleItem[],
): Promise<{ settled: Set<string>; counters: SettleCounters }> {
  const counters: SettleCounters = { envelopes: [], tenants: [], globalSessions: 0, globalMembers: 0 };
  if (items.length === 0) return { settled: new Set(), counters };
  const input = items.map((i) => ({ tenant: i.tenant, run_id: i.runId, status: i.status }));
  const { rows } = await sql<OldSlot>`
    WITH x AS (SELECT * FROM jsonb_to_recordset(${json(input)}::jsonb) AS x(tenant text, run_id text, status text)),
    old AS (
      SELECT s.tenant, s.run_id, s.status, s.class, s.lifetime, s.member, s.envelope_id, x.status AS next
      FROM adm_slots s JOIN x ON s.tenant = x.tenant AND s.run_id = x.run_id
      WHERE s.status NOT IN ('succeeded', 'failed', 'cancelled')
        AND NOT (s.status = 'queued' AND x.status = 'succeeded')
      ORDER BY s.tenant, s.run_id
      FOR UPDATE OF s
    ),
    upd AS (
      UPDATE adm_slots s SET status = old.next FROM old
      WHERE s.tenant = old.tenant AND s.run_id = old.run_id RETURNING s.run_id
    ),
    dq AS (
      DELETE FROM adm_queue q USING old
      WHERE old.status = 'queued' AND q.tenant = old.tenant AND q.run_id = old.run_id RETURNING q.run_id
    )
    SELECT tenant, run_id, status, class, lifetime, member, envelope_id FROM old`.execute(tx);
  const actuals = new Map(items.map((i) => [`${i.tenant}\u0000${i.runId}`, i.actuals]));
  const byTenant = new Map<string, TenantDelta>();
  for (const r of rows) {
    const a = actuals.get(`${r.tenant}\u0000${r.run_id}`) ?? { usd: 0, tokens: 0 };
    counters.envelopes.push({ tenant: r.tenant, env: r.envelope_id, usd: a.usd, tokens: a.tokens, n: 1 });
    let d = byTenant.get(r.tenant);
    if (!d) {
      d = { tenant: r.tenant, running: 0, qi: 0, qb: 0, qh: 0, sessions: 0, members: 0 };
      byTenant.set(r.tenant, d);
    }
    if (r.status === 'queued') d[QUEUED_KEY[r.class as RunClass]]++;
    else if (r.lifetime === 'session') {
      const m = r.member ? 1 : 0;
      d.sessions++;
      d.members += m;
      counters.globalSessions++;
      counters.globalMembers += m;
    } else d.running++;
  }
  counters.tenants = [...byTenant.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : 1));
  return { settled: new Set(rows.map((r) => r.run_id)), counters };
}

/** Phase 2 (the hot rows, last): charge actuals and release in-flight up every path; free tenant counters. */
export async function applySettleCounters(tx: Tx, c: SettleCounters): Promise<void> {
  if (c.envelopes.length === 0 && c.tenants.length === 0) return;
  await sql`
    WITH RECURSIVE d AS (
      SELECT * FROM jsonb_to_recordset(${json(c.envelopes)}::jsonb)
        AS d(tenant text, env text, usd float8, tokens float8, n int)
    ),
    p(tenant, id, parent_id, usd, tokens, n, depth) AS (
      SELECT e.tenant, e.id, e.parent_id, d.usd, d.tokens, d.n, 0
      FROM adm_envelopes e JOIN d ON e.tenant = d.tenant AND e.id = d.env
      UNION ALL
      SELECT e.tenant, e.id, e.parent_id, p.usd, p.tokens, p.n, p.depth + 1
      FROM adm_envelopes e JOIN p ON e.tenant = p.tenant AND e.id = p.parent_id WHERE p.depth < 64
    ),
    agg AS (SELECT tenant, id, sum(usd) AS usd, sum(tokens) AS tokens, sum(n)::int AS n FROM p GROUP BY tenant, id),
    env_lock AS MATERIALIZED (
      SELECT e.tenant, e.id FROM adm_envelopes e JOIN agg ON e.tenant = agg.tenant AND e.id = agg.id
      ORDER BY e.tenant, e.id
      FOR UPDATE OF e
    ),
    env AS (
      UPDATE adm_envelopes e SET spent_usd = e.spent_usd + agg.usd, spent_tokens = e.spent_tokens + agg.tokens,
        in_flight = GREATEST(e.in_flight - agg.n, 0)
      FROM agg JOIN env_lock l ON l.tenant = agg.tenant AND l.id = agg.id
      WHERE e.tenant = agg.tenant AND e.id = agg.id RETURNING e.id
    ),
    t AS (
      SELECT * FROM jsonb_to_recordset(${json(c.tenants)}::jsonb)
        AS t(tenant text, running int, qi int, qb int, qh int, sessions int, members int)
    ),
    ten_lock AS MATERIALIZED (
      SELECT a.tenant FROM adm_tenants a JOIN t ON a.tenant = t.tenant
      WHERE (SELECT count(*) FROM env) >= 0
      ORDER BY a.tenant
      FOR UPDATE OF a
    ),
    ten AS (
      UPDATE adm_tenants a SET running = a.running - t.running, queued = a.queued - (t.qi + t.qb + t.qh),
        queued_interactive = a.queued_interactive - t.qi, queued_background = a.queued_background - t.qb,
        queued_batch = a.queued_batch - t.qh, sessions = a.sessions - t.sessions,
        member_sessions = a.member_sessions - t.members
      FROM t JOIN ten_lock l ON l.tenant = t.tenant WHERE a.tenant = t.tenant RETURNING a.tenant
    ),
    g AS (
      UPDATE adm_global SET sessions = GREATEST(sessions - ${c.globalSessions}::int, 0),
        member_sessions = GREATEST(member_sessions - ${c.globalMembers}::int, 0)
      WHERE id = 1 AND ${c.globalSessions}::int > 0 AND (SELECT count(*) FROM ten) >= 0 RETURNING id
    )
    SELECT (SELECT count(*) FROM env) AS envs, (SELECT count(*) FROM ten) AS tens, (SELECT count(*) FROM g) AS g`.execute(
    tx,
  );
}
