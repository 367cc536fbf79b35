// Each run's `sandbox.runrecord/1` chain: segments stored in wire form, appended through runrecord's host
// API (which refuses illegal appends), verified from genesis on read.

import { canonicalJson, grantSet, type RecordBoundRun, unitDefinition } from '@everdict/run-model';
import {
  type Account,
  blake3,
  buildAttestation,
  bytesToHex,
  costToJson,
  decodeAttestationBody,
  decodeWire,
  encodeAttestationBody,
  encodeSegment,
  genesisHead,
  type Hex,
  type Operation,
  type Outcome,
  openRecord,
  reopenRecord,
  verifyWire,
  type WireAttestation,
  type WireAttestations,
  type WireRecord,
  type WireSegment,
} from '@everdict/runrecord';
import { json } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import type { Signer } from '../keys/signer.js';
import type { RunRow } from './runs.js';
import type { RecordView } from './views.js';

const enc = new TextEncoder();
/**
 * The address of a JSON value: BLAKE3 of its canonical JSON (run-model's `canonicalJson`, RFC 8785). A function of
 * the value alone — key order never matters — so anyone holding a run (as GET /runs/:id returns it, read back from
 * jsonb) recomputes its unit and grant-set ids, and with them the record's genesis head.
 */
export const addressOf = (value: unknown): Hex => addressOfText(canonicalJson(value));

/** BLAKE3 (hex) of a text's UTF-8: the address of a value already encoded. */
export const addressOfText = (text: string): Hex => bytesToHex(blake3(enc.encode(text)));

/**
 * unit = what is activated (tenant, kind, subject); grants = what it may use (placement, attach, envelope): the
 * addresses of run-model's `unitDefinition` / `grantSet` — what `everdict record verify` recomputes from the run.
 */
export function recordIdentity(run: RecordBoundRun) {
  const unitId = addressOfText(unitDefinition(run));
  const grantsId = addressOfText(grantSet(run));
  return { unitId, grantsId, genesisHead: genesisHead(unitId, grantsId) };
}

/** The run's record segments in wire form, in order. */
export async function segmentsOf(ex: Executor, runId: string): Promise<WireSegment[]> {
  const rows = await ex
    .selectFrom('record_segments')
    .select('payload')
    .where('run_id', '=', runId)
    .orderBy('idx')
    .execute();
  return rows.map((r) => r.payload as unknown as WireSegment);
}

function wireOf(row: RunRow, segments: WireSegment[]): WireRecord {
  return {
    format: 'sandbox.runrecord/1',
    unit_id: row.unit_id,
    grants_id: row.grants_id,
    segments,
    head: row.record_head,
  };
}

/**
 * Append operations to a run's record (the caller holds the run row's lock). Refusals throw runrecord's
 * error and nothing is written. Returns the new head and length (written to the run row too).
 */
export async function appendSegments(
  ex: Executor,
  row: RunRow,
  ops: readonly Operation[],
  at: string,
  opts: { updateRun?: boolean; segments?: WireSegment[] } = {},
) {
  if (ops.length === 0) return { head: row.record_head, length: row.record_length };
  // `segments`: the record as the caller read it under the same row lock (segmentsOfMany), else read here.
  const rec = appendOps(row, opts.segments ?? (await segmentsOf(ex, row.id)), ops, at);
  await ex
    .insertInto('record_segments')
    .values(rec.rows.map((r) => ({ ...r, payload: json(r.payload) })))
    .execute();
  if (opts.updateRun !== false) {
    await ex
      .updateTable('runs')
      .set({ record_head: rec.head, record_length: rec.length })
      .where('id', '=', row.id)
      .execute();
  }
  return { head: rec.head, length: rec.length };
}

/**
 * The segment rows appending `ops` would insert, and the new head and length — nothing written (the caller
 * inserts the rows in its own statement, holding the run row's lock). `segments`: as in `appendSegments`.
 */
export async function plannedSegments(
  ex: Executor,
  row: RunRow,
  ops: readonly Operation[],
  at: string,
  segments?: WireSegment[],
) {
  const rec = appendOps(row, segments ?? (await segmentsOf(ex, row.id)), ops, at);
  return {
    rows: rec.rows.map((r) => ({ ...r, payload: json(r.payload) })),
    head: rec.head,
    length: rec.length,
  };
}

/** The snapshot + manifest a resume must offer (null unless parked). */
export async function parkedAt(ex: Executor, row: RunRow) {
  const host = reopenRecord(decodeWire(wireOf(row, await segmentsOf(ex, row.id))));
  return host.parkedAt;
}

export interface IntervalEnd {
  startedMs: number;
  endedMs: number;
  /** Energy model: watts drawn while active (inline ≈ a few W of one core). */
  watts: number;
  meter: string;
  outcome: Outcome;
  exitCode: number;
  /** Whatever the interval produced (its journal root is this value's address). */
  journal: unknown;
  intervalHead: Hex;
  /**
   * The calls the executor REPORTED it dispatched / saw resolved during the interval. Absent → the segment
   * carries no account (nothing was observed; the record's verdict is `no_verdict`). Inline analysis
   * dispatches nothing and says so: `{ dispatched: [], resolved: [] }`.
   */
  account?: Account | undefined;
}

/** An inline interval's account: it dispatched nothing, and that was observed (the executor is ours). */
export const NO_CALLS: Account = Object.freeze({ dispatched: [], resolved: [] });

/**
 * An executed interval's attestation (the row to store by address: its wire body, signed by `signer`) and
 * the execute op — pure.
 */
export function intervalAttestation(row: RunRow, end: IntervalEnd, at: string, signer: Signer) {
  const ms = Math.max(0, end.endedMs - end.startedMs);
  const activeUj = BigInt(Math.max(1, Math.round(ms * end.watts * 1000)));
  const { attestation, address } = buildAttestation({
    unitId: row.unit_id,
    grantsId: row.grants_id,
    recordHead: end.intervalHead,
    startedMs: BigInt(end.startedMs),
    endedMs: BigInt(Math.max(end.startedMs, end.endedMs)),
    activeUj,
    provenance: 'estimated',
    meter: end.meter,
    journalRoot: addressOf(end.journal ?? null),
    outcome: end.outcome,
    exitCode: end.exitCode,
  });
  const body: WireAttestation = encodeAttestationBody({ ...attestation, signature: signer.sign(address) });
  const op: Operation = {
    op: 'execute',
    attestation: address,
    ...(end.account ? { account: end.account } : {}),
  };
  return { row: { address, tenant_id: row.tenant_id, run_id: row.id, body, created_at: at }, op };
}

/** Seal an executed interval into an attestation (stored by address) and return the execute op. */
export async function sealInterval(
  ex: Executor,
  row: RunRow,
  end: IntervalEnd,
  at: string,
  signer: Signer,
): Promise<Operation> {
  const a = intervalAttestation(row, end, at, signer);
  await ex
    .insertInto('attestations')
    .values({ ...a.row, body: json(a.row.body) })
    .onConflict((oc) => oc.column('address').doNothing())
    .execute();
  return a.op;
}

/** Segments of many runs in one read (run id → segments in order). */
export async function segmentsOfMany(ex: Executor, runIds: readonly string[]) {
  const out = new Map<string, WireSegment[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return out;
  const rows = await ex
    .selectFrom('record_segments')
    .select(['run_id', 'payload'])
    .where('run_id', 'in', [...runIds])
    .orderBy('run_id')
    .orderBy('idx')
    .execute();
  for (const r of rows) out.get(r.run_id)?.push(r.payload as unknown as WireSegment);
  return out;
}

/**
 * The run's record, ready to append to. An empty record (no segment yet: every analysis run at its settle)
 * whose head is its genesis head is opened as new — what decoding and verifying its zero segments from
 * genesis would give, without the wire decode and the verifier. Anything else is reopened (verified from
 * genesis, `expectHead` the row's head), so a bad head or segment still throws runrecord's own error.
 */
function hostOf(row: RunRow, segments: WireSegment[]) {
  if (segments.length === 0) {
    const host = openRecordOrNull(row);
    if (host !== null && host.head === row.record_head) return host;
  }
  return reopenRecord(decodeWire(wireOf(row, segments)), { expectHead: row.record_head });
}

function openRecordOrNull(row: RunRow) {
  try {
    return openRecord({ unitId: row.unit_id as Hex, grantsId: row.grants_id as Hex });
  } catch {
    return null; // a malformed identity: the reopen below refuses it with its own error
  }
}

/** Apply ops to a run's record in memory (runrecord refuses illegal appends): the rows to insert + new head. */
export function appendOps(row: RunRow, segments: WireSegment[], ops: readonly Operation[], at: string) {
  const host = hostOf(row, segments);
  const start = host.length;
  const rows = ops.map((op, i) => {
    const s = host.apply(op);
    return {
      run_id: row.id,
      idx: start + i,
      tenant_id: row.tenant_id,
      kind: s.kind,
      payload: encodeSegment(s),
      head: s.head,
      created_at: at,
    };
  });
  return { rows, head: host.head, length: host.length };
}

/**
 * The run's bundle: the stored bodies its segments name, keyed by address. A body stored before bodies
 * were kept in wire form (or otherwise unreadable) is left out: its segment then counts as `unresolved`
 * — never as zero energy, and never as signed.
 */
async function bundleOf(ex: Executor, runId: string): Promise<WireAttestations> {
  const rows = await ex
    .selectFrom('attestations')
    .select(['address', 'body'])
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .execute();
  const out: WireAttestations = {};
  for (const r of rows) {
    try {
      decodeAttestationBody(r.body);
      out[r.address] = r.body as unknown as WireAttestation;
    } catch {
      // legacy body shape: not bundled
    }
  }
  return out;
}

/**
 * The record with its attestation bundle, verified from genesis (bundle included) by runrecord: `cost`
 * and `signedBy` are runrecord's (`costToJson`: µJ as decimal strings), not a second copy of the rules.
 */
export async function readRecord(ex: Executor, row: RunRow): Promise<RecordView> {
  const bare = wireOf(row, await segmentsOf(ex, row.id));
  const attestations = await bundleOf(ex, row.id);
  const wire = Object.keys(attestations).length > 0 ? { ...bare, attestations } : bare;
  const v = verifyWire(wire, { expectHead: row.record_head });
  const verify: RecordView['verify'] = v.ok
    ? {
        ok: true,
        head: v.head,
        length: v.length,
        phase: v.phase,
        idleUj: v.idleUj.toString(),
        account: v.account.verdict,
        cost: costToJson(v.cost),
        signedBy: [...v.signedBy],
      }
    : { ok: false, error: v.error, ...(v.index !== undefined ? { index: v.index } : {}) };
  return { wire, verify };
}
