// claim (the AdmissionStore's `claim`): up to `capacity` queued runs in fair-queue order — aged items first
// (oldest first), then interactive > background > batch by least finish tag — skipping tenants at their
// concurrency quota. Candidate rows are locked with FOR UPDATE SKIP LOCKED (queue row and slot together),
// quotas re-checked under the tenant row's lock: two replicas never dispatch one run twice, nor past a quota.
// Waits happen only on tenant rows (sorted) and virtual-time rows (sorted by lane), after every skip-locked
// row. The control plane's dispatch lane does not come here: scheduler/claim-start.ts claims and starts its
// runs in one statement, locking each candidate's `runs` row before its queue row.
import { type Dispatch, globalPolicy } from '@everdict/admission';
import type { RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { json, numeric } from '../db/numeric.js';
import type { Executor, Tx } from '../db/tx.js';
import { QUEUED_COLUMN } from './rows.js';

interface Candidate {
  run_id: string;
  tenant: string;
  class: string;
  lane: number;
  finish: number;
  enqueued_at: string | number | bigint;
}

async function candidates(tx: Tx, limit: number, cutoff: number, aged: boolean): Promise<Candidate[]> {
  const age = aged ? sql`q.enqueued_at <= ${cutoff}` : sql`q.enqueued_at > ${cutoff}`;
  const order = aged ? sql`q.enqueued_at, q.seq` : sql`q.lane, q.finish, q.seq`;
  // One ordered scan of the queue; the slot rows are locked next.
  const { rows } = await sql<Candidate>`
    SELECT q.run_id, q.tenant, q.class, q.lane, q.finish, q.enqueued_at
    FROM adm_queue q
    WHERE ${age}
      AND EXISTS (SELECT 1 FROM adm_tenants t WHERE t.tenant = q.tenant AND t.running < t.max_concurrent)
    ORDER BY ${order}
    LIMIT ${limit}
    FOR UPDATE OF q SKIP LOCKED`.execute(tx);
  return rows;
}

/** The aging bound of the stored global policy (admission's default where none is stored yet). */
export async function storedAgingMs(ex: Executor): Promise<number> {
  const g = await ex.selectFrom('adm_global').select('policy').where('id', '=', 1).executeTakeFirst();
  return (g ? globalPolicy(g.policy) : globalPolicy()).agingMs;
}

export async function claimQueued(
  tx: Tx,
  capacity: number,
  now: number,
  agingMs: number,
): Promise<Dispatch[]> {
  const limit = capacity * 2 + 8;
  const cutoff = now - agingMs;
  const pool = await candidates(tx, limit, cutoff, true);
  if (pool.length < limit) pool.push(...(await candidates(tx, limit - pool.length, cutoff, false)));
  if (pool.length === 0) return [];
  // Lock the candidates' slots too (skipping any a settle/cancel holds): queue row + slot, as before.
  const slotKeys = pool.map((c) => ({ tenant: c.tenant, run_id: c.run_id }));
  const locked = await sql<{ tenant: string; run_id: string }>`
    SELECT s.tenant, s.run_id FROM adm_slots s
    JOIN jsonb_to_recordset(${json(slotKeys)}::jsonb) AS k(tenant text, run_id text)
      ON s.tenant = k.tenant AND s.run_id = k.run_id
    WHERE s.status = 'queued'
    FOR UPDATE OF s SKIP LOCKED`.execute(tx);
  const lockedKeys = new Set(locked.rows.map((r) => `${r.tenant}\u0000${r.run_id}`));
  const usable = pool.filter((c) => lockedKeys.has(`${c.tenant}\u0000${c.run_id}`));
  if (usable.length === 0) return [];

  const tenants = [...new Set(usable.map((c) => c.tenant))].sort();
  const quota = await tx
    .selectFrom('adm_tenants')
    .select(['tenant', 'running', 'max_concurrent'])
    .where('tenant', 'in', tenants)
    .orderBy('tenant')
    .forUpdate()
    .execute();
  const left = new Map(quota.map((q) => [q.tenant, Math.max(0, q.max_concurrent - q.running)]));

  const taken: Candidate[] = [];
  for (const c of usable) {
    if (taken.length >= capacity) break;
    const n = left.get(c.tenant) ?? 0;
    if (n <= 0) continue;
    left.set(c.tenant, n - 1);
    taken.push(c);
  }
  if (taken.length === 0) return [];

  const byTenant = new Map<string, Candidate[]>();
  for (const c of taken) byTenant.set(c.tenant, [...(byTenant.get(c.tenant) ?? []), c]);
  for (const [tenant, list] of byTenant) await markStarted(tx, tenant, list, now);
  const maxFinish = new Map<number, number>();
  for (const c of taken) maxFinish.set(c.lane, Math.max(maxFinish.get(c.lane) ?? 0, c.finish));
  for (const [lane, v] of [...maxFinish].sort((x, y) => x[0] - y[0])) {
    await sql`UPDATE adm_vtime SET v = GREATEST(v, ${v}::float8) WHERE lane = ${lane}`.execute(tx);
  }
  return taken.map((c) => dispatchOf(c, now));
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
 * Queued → running for some of one tenant's runs whose slots the caller holds: queue entries dropped, slots
 * running since `now`, the tenant's queued counters (per class) moved to running.
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
  await sql`UPDATE adm_tenants SET running = running + ${runs.length}::int, queued = queued - ${runs.length}::int,
      ${sql.ref(QUEUED_COLUMN.interactive)} = ${sql.ref(QUEUED_COLUMN.interactive)} - ${perClass.interactive}::int,
      ${sql.ref(QUEUED_COLUMN.background)} = ${sql.ref(QUEUED_COLUMN.background)} - ${perClass.background}::int,
      ${sql.ref(QUEUED_COLUMN.batch)} = ${sql.ref(QUEUED_COLUMN.batch)} - ${perClass.batch}::int
    WHERE tenant = ${tenant}`.execute(tx);
}
