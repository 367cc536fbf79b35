// Attested intervals' writes collected by transitionTx (`deferAttested`) and made in ONE statement for a
// completion batch (runners/completion.ts): attestation bodies, record segments, the runs' new state and,
// in the same statement, their admission slots' settles.
import { type Insertable, type Selectable, sql } from 'kysely';
import {
  RELEASE_WAKE_NOTIFY_SQL,
  type SlotSettlement,
  settleSlots,
  settleSlotsCtes,
  slotSettlementSource,
} from '../admission-store/sql/settle.js';
import { prepared } from '../db/prepared.js';
import type { AttestationsTable, RunsTable } from '../db/schema.js';
import type { Tx } from '../db/tx.js';

/** The run columns a transition writes (`ended_at` and `error` only when it sets them). */
export interface RunSet {
  status: string;
  updated_at: number;
  ended_at?: string;
  error?: string;
  outputs: string;
  usage: string;
  record_head: string;
  record_length: number;
  interval_started_at: number | null;
  interval_head: string | null;
}

/** A record segment row as `plannedSegments` plans it (payload as JSON text). */
export interface SegmentRow {
  run_id: string;
  idx: number;
  tenant_id: string;
  kind: string;
  payload: string;
  head: string;
  created_at: string;
}

/**
 * Attested intervals' writes collected by `transitionTx` (`deferAttested`) for several runs — each checked
 * in memory exactly as for the one-run statement (runrecord refused an illegal append before anything was
 * collected) — made in ONE statement: the bodies, the segments (one insert: the head log's statement
 * trigger sees them all) and every run's new state. At most one transition per run.
 */
export class AttestedWrites {
  readonly #atts: Insertable<AttestationsTable>[] = [];
  readonly #segs: SegmentRow[] = [];
  readonly #runs = new Map<string, RunSet>();

  get size(): number {
    return this.#runs.size;
  }

  add(
    attestation: Insertable<AttestationsTable>,
    segments: readonly SegmentRow[],
    runId: string,
    set: RunSet,
  ): void {
    if (this.#runs.has(runId)) throw new Error(`two deferred transitions of run ${runId}`);
    this.#atts.push(attestation);
    this.#segs.push(...segments);
    this.#runs.set(runId, set);
  }

  /**
   * Writes everything collected — and settles `settles`' admission slots in the same statement (the settle
   * CTEs of `settleSlots`: slot rows locked in order, after the runs the caller locked) — answering the
   * runs' rows as written, by id.
   */
  async flush(tx: Tx, settles: readonly SlotSettlement[] = []): Promise<Map<string, Selectable<RunsTable>>> {
    if (this.#runs.size === 0) {
      await settleSlots(tx, settles);
      return new Map();
    }
    const settle = settles.length > 0 ? sql`, ${settleSlotsCtes(slotSettlementSource(settles))}` : sql``;
    // The settle's release wake (as settleSlots'): NOTIFYed in this transaction, delivered at its commit —
    // a CTE the final SELECT reads through a one-time filter (a CTE nobody reads is not run).
    const wake =
      settles.length > 0
        ? sql` WHERE (SELECT count(*) FROM (SELECT ${RELEASE_WAKE_NOTIFY_SQL}) AS w) >= 0`
        : sql``;
    const a = this.#atts;
    const g = this.#segs;
    const r = [...this.#runs];
    const col = <T>(f: (x: [string, RunSet]) => T) => r.map(f);
    // A named prepared statement (db/prepared.ts): the same text for any number of runs (arrays are
    // parameters), planned once per pooled connection — unnamed, its planning cost more than its execution.
    const ids = col(([id]) => id);
    const { rows } = await sql<Selectable<RunsTable>>`${sql.raw(prepared('attested_write'))}
      WITH RECURSIVE att AS (
        INSERT INTO attestations (address, tenant_id, run_id, body, created_at)
        SELECT x.address, x.tenant_id, x.run_id, x.body::jsonb, x.created_at::timestamptz
        FROM unnest(${a.map((x) => x.address)}::text[], ${a.map((x) => x.tenant_id)}::text[],
          ${a.map((x) => x.run_id)}::text[], ${a.map((x) => x.body)}::text[],
          ${a.map((x) => String(x.created_at))}::text[]) AS x(address, tenant_id, run_id, body, created_at)
        ON CONFLICT (address) DO NOTHING),
      seg AS (
        INSERT INTO record_segments (run_id, idx, tenant_id, kind, payload, head, created_at)
        SELECT x.run_id, x.idx, x.tenant_id, x.kind, x.payload::jsonb, x.head, x.created_at::timestamptz
        FROM unnest(${g.map((x) => x.run_id)}::text[], ${g.map((x) => x.idx)}::int[],
          ${g.map((x) => x.tenant_id)}::text[], ${g.map((x) => x.kind)}::text[],
          ${g.map((x) => x.payload)}::text[], ${g.map((x) => x.head)}::text[],
          ${g.map((x) => x.created_at)}::text[]) AS x(run_id, idx, tenant_id, kind, payload, head, created_at)),
      upd AS (UPDATE runs r SET status = v.status, updated_at = v.updated_at,
        ended_at = CASE WHEN v.set_ended THEN v.ended_at::timestamptz ELSE r.ended_at END,
        error = CASE WHEN v.set_error THEN v.error::jsonb ELSE r.error END,
        outputs = v.outputs::jsonb, usage = v.usage::jsonb, record_head = v.record_head,
        record_length = v.record_length, interval_started_at = v.interval_started_at,
        interval_head = v.interval_head
      FROM unnest(${ids}::text[], ${col(([, s]) => s.status)}::text[],
        ${col(([, s]) => s.updated_at)}::bigint[], ${col(([, s]) => s.ended_at !== undefined)}::boolean[],
        ${col(([, s]) => s.ended_at ?? null)}::text[], ${col(([, s]) => s.error !== undefined)}::boolean[],
        ${col(([, s]) => s.error ?? null)}::text[], ${col(([, s]) => s.outputs)}::text[],
        ${col(([, s]) => s.usage)}::text[], ${col(([, s]) => s.record_head)}::text[],
        ${col(([, s]) => s.record_length)}::int[], ${col(([, s]) => s.interval_started_at)}::bigint[],
        ${col(([, s]) => s.interval_head)}::text[])
        AS v(id, status, updated_at, set_ended, ended_at, set_error, error, outputs, usage, record_head,
          record_length, interval_started_at, interval_head)
      -- id = ANY(ids) besides the join: runs_pkey even in a generic plan made on a small table (settle_write's)
      WHERE r.id = ANY(${ids}::text[]) AND r.id = v.id
      RETURNING r.*)${settle}
      SELECT upd.* FROM upd${wake}`.execute(tx);
    if (rows.length !== this.#runs.size)
      throw new Error(`a deferred attested write updated ${rows.length} of ${this.#runs.size} runs`);
    return new Map(rows.map((row) => [row.id, row]));
  }
}
