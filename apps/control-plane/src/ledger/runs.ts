// The runs table: a run-model Run per row, with indexed columns for every list filter.
import type { Run } from '@everdict/run-model';
import { type Selectable, sql } from 'kysely';
import { type DbNumeric, iso, json, numeric } from '../db/numeric.js';
import type { RunsTable } from '../db/schema.js';
import type { Executor } from '../db/tx.js';
import type { RunView } from './views.js';

/**
 * A run's row as every read sees it: the ledger's columns and, joined from its admission slot (the one
 * owner, issue 10 §3), its causal depth and start (epoch ms).
 */
export type RunRow = Selectable<RunsTable> & { causal_depth: number; started_ms: DbNumeric | null };

/**
 * `SELECT … FROM runs` with the slot's depth and start joined, as a table named `runs` (filters, joins and
 * orders read as on the table). Every read mapped through `rowToRun`/`rowToView` starts here. A lock
 * (`forUpdate`) on it takes the run row and its slot (the documented order: runs → slots).
 */
export function selectRunRows(ex: Executor) {
  return ex.selectFrom((eb) =>
    eb
      .selectFrom('runs as r')
      .innerJoin('adm_slots as s', (j) =>
        j.onRef('s.tenant', '=', 'r.tenant_id').onRef('s.run_id', '=', 'r.id'),
      )
      .selectAll('r')
      .select(['s.depth as causal_depth', 's.started_at as started_ms'])
      .as('runs'),
  );
}

/** A run row written with its slot's depth and start alongside (the slot is written in the same transaction). */
export function withSlot(
  row: Selectable<RunsTable>,
  slot: { depth: number; startedMs: number | null },
): RunRow {
  return { ...row, causal_depth: slot.depth, started_ms: slot.startedMs };
}

export interface RecordIdentityRow {
  unitId: string;
  grantsId: string;
  genesisHead: string;
}

/** The run's row with jsonb columns as plain values (one JSON document per row). */
export function runDocument(run: Run, extra: { envelopeId: string } & RecordIdentityRow) {
  return {
    id: run.id,
    tenant_id: run.tenant,
    kind: run.kind,
    status: run.status,
    lifetime: run.lifetime,
    class: run.class,
    group_id: run.group?.id ?? null,
    caused_by_run_id: run.origin.causedByRunId ?? null,
    created_by: run.createdBy,
    created_at: run.createdAt,
    updated_at: Date.parse(run.updatedAt),
    ended_at: run.settledAt ?? null,
    expires_at: run.expiresAt ?? null,
    envelope_id: extra.envelopeId,
    subject: run.subject,
    origin: run.origin,
    placement: run.placement,
    attach: run.attach,
    envelope: run.envelope ?? null,
    group_ref: run.group ?? null,
    lineage: run.lineage ?? null,
    outputs: run.outputs,
    usage: run.usage,
    error: run.error ?? null,
    unit_id: extra.unitId,
    grants_id: extra.grantsId,
    record_head: extra.genesisHead,
    record_length: 0,
    interval_started_at: null,
    interval_head: null,
  };
}
export type RunDocument = ReturnType<typeof runDocument>;

const JSONB_COLUMNS = [
  'subject',
  'origin',
  'placement',
  'attach',
  'envelope',
  'group_ref',
  'lineage',
  'outputs',
  'usage',
  'error',
] as const satisfies readonly (keyof RunDocument)[];
type JsonbColumn = (typeof JSONB_COLUMNS)[number];

/** The row for kysely's insert (jsonb columns passed as JSON text). */
export function runToRow(
  run: Run,
  extra: { envelopeId: string } & RecordIdentityRow,
): Omit<RunDocument, JsonbColumn> & Record<JsonbColumn, string> {
  const d = runDocument(run, extra);
  const text = Object.fromEntries(JSONB_COLUMNS.map((c) => [c, json(d[c])])) as Record<JsonbColumn, string>;
  return { ...d, ...text };
}

/** `INSERT … RETURNING *` of many rows with a fixed SQL text (one jsonb parameter): preparable. */
export function insertRunsSql(docs: readonly RunDocument[]) {
  const first = docs[0];
  if (!first) throw new Error('insertRunsSql: no rows');
  // The columns named are the document's (runDocument builds every row with the same keys, in the same
  // order): a column a later migration adds gets its DEFAULT, not the NULL a missing key would give.
  const cols = sql.join(Object.keys(first).map((k) => sql.id(k)));
  return sql<Selectable<RunsTable>>`INSERT INTO runs (${cols})
    SELECT ${cols} FROM jsonb_populate_recordset(NULL::runs, ${json(docs)}::jsonb)
    RETURNING *`;
}

/** The run-model Run stored in a row (fields absent when null). */
export function rowToRun(r: RunRow): Run {
  const run: Record<string, unknown> = {
    id: r.id,
    tenant: r.tenant_id,
    kind: r.kind,
    subject: r.subject,
    status: r.status,
    origin: r.origin,
    placement: r.placement,
    lifetime: r.lifetime,
    attach: r.attach,
    class: r.class,
    outputs: r.outputs,
    usage: r.usage,
    createdBy: r.created_by,
    createdAt: iso(r.created_at),
    updatedAt: new Date(Number(r.updated_at)).toISOString(),
  };
  if (r.envelope) run.envelope = r.envelope;
  if (r.group_ref) run.group = r.group_ref;
  if (r.lineage) run.lineage = r.lineage;
  if (r.error) run.error = r.error;
  if (r.started_ms !== null) run.startedAt = new Date(numeric(r.started_ms)).toISOString();
  if (r.ended_at) run.settledAt = iso(r.ended_at);
  if (r.trajectory) run.trajectory = r.trajectory;
  if (r.expires_at) run.expiresAt = iso(r.expires_at);
  if (r.attempt) run.attempt = r.attempt;
  return run as unknown as Run;
}

export function rowToView(r: RunRow): RunView {
  return {
    ...rowToRun(r),
    causalDepth: r.causal_depth,
    record: { head: r.record_head, length: r.record_length },
  };
}

export async function findRun(ex: Executor, tenant: string, id: string): Promise<RunRow | undefined> {
  return selectRunRows(ex)
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function lockRun(ex: Executor, tenant: string, id: string): Promise<RunRow | undefined> {
  return selectRunRows(ex)
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export interface ListFilter {
  kind?: string | undefined;
  status?: string | undefined;
  lifetime?: string | undefined;
  groupId?: string | undefined;
  causedBy?: string | undefined;
  createdBy?: string | undefined;
  limit: number;
  /** Keyset: rows strictly older than (createdAt, id). */
  before?: { createdAt: string; id: string } | undefined;
}

export async function listRuns(ex: Executor, tenant: string, f: ListFilter): Promise<RunRow[]> {
  let q = selectRunRows(ex).selectAll().where('tenant_id', '=', tenant);
  if (f.kind) q = q.where('kind', '=', f.kind);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.lifetime) q = q.where('lifetime', '=', f.lifetime);
  if (f.groupId) q = q.where('group_id', '=', f.groupId);
  if (f.causedBy) q = q.where('caused_by_run_id', '=', f.causedBy);
  if (f.createdBy) q = q.where('created_by', '=', f.createdBy);
  const b = f.before;
  if (b) {
    q = q.where((eb) =>
      eb.or([
        eb('created_at', '<', new Date(b.createdAt)),
        eb.and([eb('created_at', '=', new Date(b.createdAt)), eb('id', '<', b.id)]),
      ]),
    );
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
}

export function encodeCursor(r: RunRow | { created_at: Date | string; id: string }): string {
  return Buffer.from(JSON.stringify([iso(r.created_at), r.id])).toString('base64url');
}

/** What `encodeCursor` writes: a `Date#toISOString()` and an id. Anything else was not issued by us. */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CURSOR_ID = /^[\x21-\x7e]{1,200}$/;

/** A cursor this API issued → its keyset position; anything else (crafted, garbled, foreign) → null. */
export function decodeCursor(c: string): { createdAt: string; id: string } | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [createdAt, id] = v as unknown[];
    if (typeof createdAt !== 'string' || typeof id !== 'string') return null;
    if (!CURSOR_TIME.test(createdAt) || Number.isNaN(Date.parse(createdAt)) || !CURSOR_ID.test(id))
      return null;
    return { createdAt, id };
  } catch {
    return null;
  }
}
