// The scheduler's transitions in batches: start K claimed runs, settle K finished runs — each batch in ONE
// transaction with a fixed number of statements (not K×), the same writes as transitionTx: the status
// machine's {patch, facts}, the record segments (interval attestation + close), the outbox, the admission
// slot; the hot admission rows (envelopes, tenant) are written last, held only for one statement + commit.
import { type RunEvent, totalTokens, transition } from '@everdict/run-model';
import { sql } from 'kysely';
import { applySettleCounters, type SettleItem, settleSlotsMany } from '../admission-store/settle-many.js';
import { json } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';
import { appendEvents, type NewEvent } from '../ledger/events.js';
import { appendOps, intervalAttestation, segmentsOfMany } from '../ledger/records.js';
import { type RunRow, rowToRun } from '../ledger/runs.js';
import { type Deps, nowIso } from '../services/context.js';
import { factsToEvents, type TransitionExtras } from '../services/transition.js';

const DEFAULT_METER = { watts: 5, meter: 'inline-wallclock-model' };

async function lockRuns(tx: Tx, ids: readonly string[]): Promise<Map<string, RunRow>> {
  if (ids.length === 0) return new Map();
  const rows = await tx
    .selectFrom('runs')
    .selectAll()
    .where('id', 'in', [...ids])
    .orderBy('id')
    .forUpdate()
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** queued → running for runs the claim just took (their slots are already running). Returns the rows. */
export async function startMany(
  tx: Tx,
  deps: Deps,
  claims: readonly { tenant: string; runId: string }[],
): Promise<RunRow[]> {
  const rows = await lockRuns(
    tx,
    claims.map((c) => c.runId),
  );
  const at = nowIso(deps);
  const events: NewEvent[] = [];
  const started: RunRow[] = [];
  const updates: { id: string; updated_at: string; started_at: string }[] = [];
  for (const c of claims) {
    const row = rows.get(c.runId);
    if (!row || row.tenant_id !== c.tenant) throw new Error(`claimed run ${c.runId} has no row`);
    const result = transition(rowToRun(row), { type: 'start' }, at);
    if (!result.ok) throw new Error(`claimed run ${c.runId} cannot start: ${result.error.message}`);
    const startedAt = result.patch.startedAt ?? at;
    updates.push({ id: row.id, updated_at: result.patch.updatedAt, started_at: startedAt });
    events.push(...factsToEvents(result.facts));
    started.push({
      ...row,
      status: 'running',
      started_at: new Date(startedAt),
      updated_at: new Date(result.patch.updatedAt),
    });
  }
  if (updates.length === 0) return [];
  await sql`
    UPDATE runs r SET status = 'running', updated_at = u.updated_at, started_at = u.started_at,
      interval_started_at = ${at}::timestamptz, interval_head = r.record_head
    FROM jsonb_to_recordset(${json(updates)}::jsonb) AS u(id text, updated_at timestamptz, started_at timestamptz)
    WHERE r.id = u.id`.execute(tx);
  await appendEvents(tx, events);
  return started;
}

export interface Finished {
  tenant: string;
  runId: string;
  event: Extract<RunEvent, { type: 'succeed' | 'fail' }>;
  extras: TransitionExtras;
}

/**
 * running → succeeded | failed for K runs. A run no longer running (cancelled meanwhile) is skipped: terminal
 * is terminal, the late result is dropped. Returns the ids settled.
 */
export async function settleMany(tx: Tx, deps: Deps, items: readonly Finished[]): Promise<string[]> {
  const rows = await lockRuns(
    tx,
    items.map((i) => i.runId),
  );
  const live = [...rows.values()].filter((r) => r.status === 'running');
  const segments = await segmentsOfMany(
    tx,
    live.map((r) => r.id),
  );
  const at = nowIso(deps);
  const nowMs = Date.parse(at);
  const attestations: unknown[] = [];
  const segmentRows: unknown[] = [];
  const updates: unknown[] = [];
  const events: NewEvent[] = [];
  const slots: SettleItem[] = [];
  for (const it of items) {
    const row = rows.get(it.runId);
    if (!row || row.tenant_id !== it.tenant || row.status !== 'running') continue;
    const result = transition(rowToRun(row), it.event, at);
    if (!result.ok) continue;
    const { run, patch, facts } = result;
    const outputs = it.extras.outputs ? { ...run.outputs, ...it.extras.outputs } : run.outputs;
    const usage = it.extras.usage ? { ...run.usage, ...it.extras.usage } : run.usage;
    const outcome = it.event.type === 'succeed' ? 'succeeded' : 'failed';
    const meter = { ...DEFAULT_METER, ...it.extras.interval };
    const a = intervalAttestation(
      row,
      {
        startedMs: row.interval_started_at ? row.interval_started_at.getTime() : nowMs,
        endedMs: nowMs,
        watts: meter.watts,
        meter: meter.meter,
        outcome,
        exitCode: it.extras.interval?.exitCode ?? (outcome === 'failed' ? 1 : 0),
        journal: it.extras.interval?.journal ?? { outputs, facts },
        intervalHead: row.interval_head ?? row.record_head,
      },
      at,
    );
    const close = { op: 'close', reason: outcome === 'succeeded' ? 'completed' : 'failed' } as const;
    const rec = appendOps(row, segments.get(row.id) ?? [], [a.op, close], at);
    attestations.push(a.row);
    segmentRows.push(...rec.rows);
    updates.push({
      id: row.id,
      status: patch.status,
      updated_at: patch.updatedAt,
      ended_at: patch.settledAt ?? at,
      error: patch.error ?? row.error ?? null,
      outputs,
      usage,
      record_head: rec.head,
      record_length: rec.length,
    });
    events.push(...factsToEvents(facts));
    const u = usage as Parameters<typeof totalTokens>[0];
    slots.push({
      tenant: row.tenant_id,
      runId: row.id,
      status: outcome,
      actuals: { usd: u.costUsd ?? 0, tokens: totalTokens(u) || 0 },
    });
  }
  if (updates.length === 0) return [];
  await sql`
    WITH a AS (
      INSERT INTO attestations (address, tenant_id, run_id, body, created_at)
      SELECT x.address, x.tenant_id, x.run_id, x.body, x.created_at
      FROM jsonb_to_recordset(${json(attestations)}::jsonb)
        AS x(address text, tenant_id text, run_id text, body jsonb, created_at timestamptz)
      ON CONFLICT (address) DO NOTHING RETURNING 1
    ), s AS (
      INSERT INTO record_segments (run_id, idx, tenant_id, kind, payload, head, created_at)
      SELECT x.run_id, x.idx, x.tenant_id, x.kind, x.payload, x.head, x.created_at
      FROM jsonb_to_recordset(${json(segmentRows)}::jsonb)
        AS x(run_id text, idx int, tenant_id text, kind text, payload jsonb, head text, created_at timestamptz)
      RETURNING 1
    )
    UPDATE runs r SET status = u.status, updated_at = u.updated_at, ended_at = u.ended_at, error = u.error,
      outputs = u.outputs, usage = u.usage, record_head = u.record_head, record_length = u.record_length,
      interval_started_at = NULL, interval_head = NULL
    FROM jsonb_to_recordset(${json(updates)}::jsonb) AS u(id text, status text, updated_at timestamptz,
      ended_at timestamptz, error jsonb, outputs jsonb, usage jsonb, record_head text, record_length int)
    WHERE r.id = u.id`.execute(tx);
  const { counters } = await settleSlotsMany(tx, slots);
  await appendEvents(tx, events);
  await applySettleCounters(tx, counters);
  return slots.map((s) => s.runId);
}
