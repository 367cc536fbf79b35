// Settle K finished runs in TWO autocommit statements (one for carried runs), whatever K (the start side is
// claim-start.ts): the same writes as transitionTx — the status machine's {patch, facts}, the record segments
// (the interval's attestation where the control plane seals one — `sealsOwnInterval`, transitionTx's rule — and
// the close), the outbox, the admission slot and counters (admission-store/sql/settle.ts), the hot rows last.
//
// 1. Read the runs and their record segments, without locks (one statement) — except the runs a carrying claim
//    handed over as it wrote them (`Finished.carried`, the inline lane: claim-start.ts `carry`), which are
//    planned from that row, version and segments: for them the write is the only statement.
// 2. In JS: each run's transition, attestation and record ops (runrecord hashes the chain). A result the
//    status machine or the usage check refuses is written nowhere: reported (`refused`, with its code) and
//    logged as a warning, never counted as settled.
// 3. Write everything in ONE statement that first updates the runs (by id) it keeps: only those still running
//    at the row version read in 1 (`xmin`). The UPDATE is its own lock: a row changed by a transaction it
//    waited on is re-checked on its new version (READ COMMITTED), whose xmin differs, and left out; every
//    other write joins the UPDATE's RETURNING (no FOR UPDATE first: no Heap/LOCK WAL record per run). A run
//    cancelled, or changed in any way, since the read is left out of every write. Those are read again and retried; a run no longer running is dropped (terminal is
//    terminal: the late result is lost, as it must be). One statement is atomic: no BEGIN/COMMIT needed.
import { ReportedUsage, type RunEvent, totalTokens, transition } from '@everdict/run-model';
import { sql } from 'kysely';
import { SETTLE_WAKE_SQL, settleSlotsCtes } from '../admission-store/sql/settle.js';
import { json, numeric } from '../db/numeric.js';
import { prepared } from '../db/prepared.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, type ControlPlaneErrorCode } from '../errors.js';
import { releaseSettled } from '../leases/store.js';
import { EVENTS_CHANNEL, notifyAfterCommit, notifyCalls } from '../ledger/events.js';
import { appendOps, intervalAttestation } from '../ledger/records.js';
import { rowToRun } from '../ledger/runs.js';
import { toControlPlaneError } from '../services/boundary.js';
import { type Deps, DISPATCH_CHANNEL, nowIso } from '../services/context.js';
import {
  factsToEvents,
  observedAccount,
  sealsOwnInterval,
  type TransitionExtras,
  transitionRefusal,
} from '../services/transition.js';
import type { Carried } from './claim-start.js';

const DEFAULT_METER = { watts: 5, meter: 'inline-wallclock-model' };
/** Re-reads of runs whose row changed between read and write before giving up on them (and logging). */
const ATTEMPTS = 5;

export interface Finished {
  tenant: string;
  runId: string;
  event: Extract<RunEvent, { type: 'succeed' | 'fail' }>;
  extras: TransitionExtras;
  /** The lease epoch the result was produced under (leases/): a run at another attempt refuses it. */
  epoch?: number;
  /**
   * The run as the claim that started it wrote it (claim-start.ts `carry`: this process's inline lane). Planned
   * from it, the first write needs no read: it applies only if the row is still at that version, and a run
   * changed since is read and planned again like any other.
   */
  carried?: Carried;
}

/**
 * The runs with their row version and record segments: one statement, no locks. Not a prepared statement: a
 * generic plan made while the tables were small (a fresh database) joins them by sequential scans and keeps
 * doing so as they grow; planned per call, it follows their size.
 */
export async function readRuns(ex: Executor, ids: readonly string[]): Promise<Map<string, Carried>> {
  const rows = await ex
    .selectFrom('runs as r')
    .innerJoin('adm_slots as s', (j) =>
      j.onRef('s.tenant', '=', 'r.tenant_id').onRef('s.run_id', '=', 'r.id'),
    )
    .selectAll('r')
    .select([
      sql<string>`r.xmin::text`.as('version'),
      's.depth as causal_depth',
      's.started_at as started_ms',
      sql<Carried['segments']>`(SELECT jsonb_agg(g.payload ORDER BY g.idx) FROM record_segments g
        WHERE g.run_id = r.id)`.as('segments'),
    ])
    .where('r.id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * A result the status machine refuses for a run still running (transitionTx's refusal, by the same rule:
 * `transitionRefusal` — e.g. `conflict` with `reason: clock_behind` when this replica's clock is behind the
 * run's last update, the schema refusal for a malformed fail event) or whose reported usage is out of bounds
 * (`ReportedUsage`, as transitionTx checks it: `out_of_range` for a cost past MAX_USAGE_USD or a non-finite
 * one). Nothing of it is written; the run stays running, and its lease, no longer renewed, expires into the
 * sweep (leases/sweep.ts).
 */
export interface SettleRefusal {
  tenant: string;
  runId: string;
  /** The app's stable code (errors.ts REFUSALS). */
  code: ControlPlaneErrorCode;
  /** What refused it: run-model's code, `clock_behind`, or the usage check's. */
  reason: string;
  message: string;
}

/** What one write statement settles: rows for the run, segment and event writes, and the items they cover. */
export interface SettlePlan {
  runs: Record<string, unknown>[];
  segments: Record<string, unknown>[];
  events: Record<string, unknown>[];
  items: Finished[];
  /** Items refused before any write (logged as they are found): never settled by a retry. */
  refused: SettleRefusal[];
}

function refusalOf(it: Finished, e: ControlPlaneError): SettleRefusal {
  const reason = e.details.reason;
  return {
    tenant: it.tenant,
    runId: it.runId,
    code: e.code,
    reason: typeof reason === 'string' ? reason : e.code,
    message: e.message,
  };
}

/** The usage check every reported usage passes (transitionTx's): a refusal, or null. */
function usageRefusal(it: Finished): SettleRefusal | null {
  if (!it.extras.usage) return null;
  const parsed = ReportedUsage.safeParse(it.extras.usage);
  if (parsed.success) return null;
  const e = toControlPlaneError(parsed.error);
  return refusalOf(it, e instanceof ControlPlaneError ? e : new ControlPlaneError('bad_request', String(e)));
}

/** Steps 1–2: read the items' runs and plan the writes of those still running (record chain in memory). */
export async function planSettle(
  ex: Executor,
  deps: Deps,
  finished: readonly Finished[],
): Promise<SettlePlan> {
  // One entry per run: a repeat would write its record segments twice.
  const items = [...new Map(finished.map((i) => [i.runId, i])).values()];
  const unread = items.filter((i) => i.carried === undefined).map((i) => i.runId);
  const rows = unread.length > 0 ? await readRuns(ex, unread) : new Map<string, Carried>();
  for (const i of items) if (i.carried !== undefined) rows.set(i.runId, i.carried);
  const at = nowIso(deps);
  const nowMs = Date.parse(at);
  const out: SettlePlan = { runs: [], segments: [], events: [], items: [], refused: [] };
  const refuse = (r: SettleRefusal) => {
    out.refused.push(r);
    deps.log('warn', 'settle: result refused, not applied (the run stays running until its lease expires)', {
      ...r,
    });
  };
  for (const it of items) {
    const row = rows.get(it.runId);
    if (!row || row.tenant_id !== it.tenant || row.status !== 'running') continue;
    // A superseded attempt's result (its lease was lost and the run requeued): refused, nothing written.
    if (it.epoch !== undefined && row.attempt !== it.epoch) continue;
    const badUsage = usageRefusal(it);
    if (badUsage) {
      refuse(badUsage);
      continue;
    }
    const result = transition(rowToRun(row), it.event, at);
    if (!result.ok) {
      refuse(refusalOf(it, transitionRefusal(result.error)));
      continue;
    }
    const { run, patch, facts } = result;
    const outputs = it.extras.outputs ? { ...run.outputs, ...it.extras.outputs } : run.outputs;
    const usage = it.extras.usage ? { ...run.usage, ...it.extras.usage } : run.usage;
    const outcome = it.event.type === 'succeed' ? 'succeeded' : 'failed';
    const meter = { ...DEFAULT_METER, ...it.extras.interval };
    const a = !sealsOwnInterval(row.kind, it.extras)
      ? null
      : intervalAttestation(
          row,
          {
            startedMs: row.interval_started_at !== null ? numeric(row.interval_started_at) : nowMs,
            endedMs: nowMs,
            watts: meter.watts,
            meter: meter.meter,
            outcome,
            exitCode: it.extras.interval?.exitCode ?? (outcome === 'failed' ? 1 : 0),
            journal: it.extras.interval?.journal ?? { outputs, facts },
            intervalHead: row.interval_head ?? row.record_head,
            account: observedAccount(row.kind, it.extras.account),
          },
          at,
          deps.signer,
        );
    const close = {
      op: 'close',
      reason: it.extras.closeReason ?? (outcome === 'succeeded' ? 'completed' : 'failed'),
    } as const;
    const rec = appendOps(row, row.segments ?? [], a ? [a.op, close] : [close], at);
    const u = usage as Parameters<typeof totalTokens>[0];
    out.runs.push({
      id: row.id,
      tenant: row.tenant_id,
      version: row.version,
      status: patch.status,
      updated_at: Date.parse(patch.updatedAt),
      ended_at: patch.settledAt ?? at,
      error: patch.error ?? row.error ?? null,
      outputs,
      usage,
      record_head: rec.head,
      record_length: rec.length,
      att_address: a?.row.address ?? null,
      att_body: a?.row.body ?? null,
      att_at: a?.row.created_at ?? null,
      usd: u.costUsd ?? 0,
      tokens: totalTokens(u) || 0,
    });
    out.segments.push(...rec.rows);
    for (const e of factsToEvents(facts)) out.events.push({ ...e, ord: out.events.length });
    out.items.push(it);
  }
  // The write updates (and so locks) the run rows in this order: by id, the control plane's lock order.
  out.runs.sort((a, b) => (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0));
  return out;
}

/**
 * The settle's facts are announced on EVENTS_CHANNEL, and a release the claimers wait for on the dispatch
 * channel (the payload settle.ts chose). On a database handle the write has committed: the
 * NOTIFY goes after it, off its WAL flush (ledger/events.ts notifyAfterCommit), not awaited. Inside a
 * transaction it is queued there and delivered at the caller's commit.
 */
async function notifySettled(ex: Executor, deps: Deps, wake: string | null): Promise<void> {
  const channels = wake === null ? [EVENTS_CHANNEL] : [EVENTS_CHANNEL, [DISPATCH_CHANNEL, wake] as const];
  if (ex.isTransaction) await sql`SELECT ${notifyCalls(channels)}`.execute(ex);
  else
    void notifyAfterCommit(
      ex,
      channels,
      (e) => deps.log('warn', 'settle: notify failed (listeners poll)', { error: String(e) }),
      deps.ldb,
    );
}

/**
 * Step 3, the one write statement; returns the ids it settled (the runs still at the version read) and whether
 * it released capacity a tenant's queued runs wait for: the claimers' wake payload, or null (settle.ts).
 */
export async function writeSettle(
  ex: Executor,
  p: SettlePlan,
): Promise<{ ids: string[]; wake: string | null }> {
  const slots = sql`SELECT x.tenant, x.id AS run_id, x.status, x.usd, x.tokens FROM x
    WHERE x.id IN (SELECT id FROM ok) AND (SELECT count(*) FROM ok) >= 0`;
  const { rows } = await sql<{ id: string; wake: string | null }>`${sql.raw(prepared('settle_write'))}
    WITH RECURSIVE x AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${json(p.runs)}::jsonb) AS x(id text, tenant text, version text,
        status text, updated_at bigint, ended_at timestamptz, error jsonb, outputs jsonb, usage jsonb,
        record_head text, record_length int, att_address text, att_body jsonb, att_at timestamptz,
        usd float8, tokens float8)
    ),
    ok AS (
      UPDATE runs r SET status = x.status, updated_at = x.updated_at, ended_at = x.ended_at, error = x.error,
        outputs = x.outputs, usage = x.usage, record_head = x.record_head, record_length = x.record_length,
        interval_started_at = NULL, interval_head = NULL
      -- id = ANY(ids) besides the join: runs_pkey then wins even in a generic plan made on a small table (joined
      -- to x alone — 100 rows to the planner — a sequential scan did, kept as the table grew; settle-plan.pg.test)
      FROM x WHERE r.id = ANY(${p.items.map((i) => i.runId)}::text[]) AND r.id = x.id AND r.status = 'running'
        AND r.xmin::text = x.version
      RETURNING r.id
    ),
    att AS (
      INSERT INTO attestations (address, tenant_id, run_id, body, created_at)
      SELECT x.att_address, x.tenant, x.id, x.att_body, x.att_at FROM x JOIN ok ON ok.id = x.id
      WHERE x.att_address IS NOT NULL
      ON CONFLICT (address) DO NOTHING RETURNING 1
    ),
    seg AS (
      INSERT INTO record_segments (run_id, idx, tenant_id, kind, payload, head, created_at)
      SELECT g.run_id, g.idx, g.tenant_id, g.kind, g.payload, g.head, g.created_at
      FROM jsonb_to_recordset(${json(p.segments)}::jsonb) AS g(run_id text, idx int, tenant_id text, kind text,
        payload jsonb, head text, created_at timestamptz)
      JOIN ok ON ok.id = g.run_id
      RETURNING 1
    ),
    ev AS (
      INSERT INTO events (tenant_id, kind, run_id, payload, created_at)
      SELECT e.tenant, e.kind, e."runId", e.data, e.at
      FROM jsonb_to_recordset(${json(p.events)}::jsonb) AS e(tenant text, kind text, "runId" text, data jsonb,
        at timestamptz, ord int)
      JOIN ok ON ok.id = e."runId"
      ORDER BY e.ord
      RETURNING 1
    ),
    lease AS (${releaseSettled(sql`SELECT id AS run_id FROM ok`)}),
    ${settleSlotsCtes(slots)}
    SELECT ok.id, ${SETTLE_WAKE_SQL} AS wake FROM ok
    WHERE (SELECT count(*) FROM ev) >= 0 AND (SELECT count(*) FROM lease) >= 0`.execute(ex);
  return { ids: rows.map((r) => r.id), wake: rows[0]?.wake ?? null };
}

/** What settling a batch came to: the ids settled, and the items refused (each logged once, as a warning). */
export interface SettleOutcome {
  settled: string[];
  refused: SettleRefusal[];
}

/**
 * running → succeeded | failed for K runs. A run no longer running (cancelled meanwhile) is skipped: terminal
 * is terminal, the late result is dropped. A result the status machine (or the usage check) refuses is
 * reported in `refused` with its code, never as settled. On a database handle each statement commits alone;
 * inside a transaction, the caller's commit decides.
 */
export async function settleOutcome(
  ex: Executor,
  deps: Deps,
  items: readonly Finished[],
): Promise<SettleOutcome> {
  const settled: string[] = [];
  const refused: SettleRefusal[] = [];
  let todo: readonly Finished[] = items;
  for (let attempt = 0; attempt < ATTEMPTS && todo.length > 0; attempt++) {
    const p = await planSettle(ex, deps, todo);
    refused.push(...p.refused);
    if (p.items.length === 0) return { settled, refused };
    const written = await writeSettle(ex, p);
    const done = new Set(written.ids);
    if (done.size > 0) await notifySettled(ex, deps, written.wake);
    settled.push(...done);
    // Not written: the row changed since it was read (or carried); read again.
    todo = p.items.filter((i) => !done.has(i.runId)).map(({ carried: _c, ...i }) => i);
  }
  if (todo.length > 0)
    deps.log('warn', 'settle: run rows kept changing; results left unsettled', {
      runIds: todo.map((i) => i.runId),
    });
  return { settled, refused };
}

/** `settleOutcome`'s settled ids (the refused ones are logged there). */
export async function settleMany(ex: Executor, deps: Deps, items: readonly Finished[]): Promise<string[]> {
  return (await settleOutcome(ex, deps, items)).settled;
}
