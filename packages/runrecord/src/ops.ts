// `build`: apply the operations of an ops.json document to a new record. The document's envelope must
// parse (MalformedRecord, no index, otherwise); each op is then read and applied in turn with the host's
// order of checks — RecordClosed first, then the op's own encoding, then the rules, an `execute` op's
// `body` being read (MalformedRecord if it is not exactly a well-formed attestation) right after the
// segment's PhaseViolation check, as rule 6 is on verify — and the first refusal stops the build with the
// record as it stood. Bodies go into the wire form's bundle; with
// none, the wire form has no `attestations` key.
import * as z from 'zod';
import { decodeAttestationBody } from './bundle.js';
import type { Hex } from './bytes.js';
import { isRunRecordError, RunRecordError, type SpecErrorCode } from './errors.js';
import type { Operation } from './host.js';
import { type HostRecord, openRecord } from './host-record.js';
import type { SegmentBody } from './types.js';
import {
  accountSchema,
  addrSchema,
  parseJson,
  provenanceSchema,
  reasonSchema,
  snapshotSchema,
  u64Schema,
  zodProblem,
} from './wire.js';

const opSchema = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('execute'),
    attestation: addrSchema,
    account: accountSchema.optional(),
    body: z.unknown().optional(),
  }),
  z.strictObject({ op: z.literal('suspend'), snapshot: snapshotSchema, manifest: addrSchema }),
  z.strictObject({
    op: z.literal('resume'),
    snapshot: snapshotSchema,
    manifest: addrSchema,
    idle_uj: u64Schema,
    idle_provenance: provenanceSchema,
  }),
  z.strictObject({ op: z.literal('close'), reason: reasonSchema }),
]);

const docSchema = z.strictObject({ unit_id: addrSchema, grants_id: addrSchema, ops: z.array(z.unknown()) });

/** One ops.json operation → an Operation (MalformedRecord if it, or an `execute` op's body, cannot be read). */
export function parseOperation(raw: unknown): Operation {
  const { op, bodyError } = readOperation(raw);
  if (bodyError) throw bodyError;
  return op;
}

/**
 * One ops.json operation (MalformedRecord if it cannot be read). An `execute` op's body that cannot be read
 * comes back beside the op, which is then without it: rule 6 ("the body encodes") is checked after the
 * segment's PhaseViolation check, on append as on verify.
 */
function readOperation(raw: unknown): { op: Operation; bodyError?: RunRecordError } {
  const r = opSchema.safeParse(raw);
  if (!r.success) throw new RunRecordError('MalformedRecord', zodProblem(r.error));
  const o = r.data;
  if (o.op === 'execute') {
    const { body, ...rest } = o;
    if (!('body' in o)) return { op: rest };
    try {
      return { op: { ...rest, body: decodeAttestationBody(body) } };
    } catch (e) {
      if (!isRunRecordError(e)) throw e;
      return { op: rest, bodyError: e };
    }
  }
  if (o.op === 'resume') {
    const { idle_uj, idle_provenance, ...rest } = o;
    return { op: { ...rest, idleUj: idle_uj, idleProvenance: idle_provenance } };
  }
  return { op: o };
}

export type BuildResult =
  | { readonly ok: true; readonly record: HostRecord }
  | {
      readonly ok: false;
      readonly error: SpecErrorCode;
      readonly message: string;
      /** The refused op (absent when the document itself cannot be read). */
      readonly index?: number;
      /** The record as it stood: unchanged by the refused op. */
      readonly length?: number;
      readonly head?: Hex;
    };

/** Builds a record from an ops.json document (parsed JSON, or its text). */
export function buildRecord(doc: unknown): BuildResult {
  let record: HostRecord;
  let ops: unknown[];
  try {
    const json = typeof doc === 'string' ? parseJson(doc) : doc;
    const r = docSchema.safeParse(json);
    if (!r.success) throw new RunRecordError('MalformedRecord', zodProblem(r.error));
    record = openRecord({ unitId: r.data.unit_id, grantsId: r.data.grants_id });
    ops = r.data.ops;
  } catch (e) {
    if (!isRunRecordError(e)) throw e;
    return { ok: false, error: e.code as SpecErrorCode, message: e.detail };
  }
  for (const [index, raw] of ops.entries()) {
    try {
      if (record.phase === 'closed') throw new RunRecordError('RecordClosed', 'the record is closed');
      const { op, bodyError } = readOperation(raw);
      if (bodyError) {
        // The segment's own checks first (RecordClosed, encoding, PhaseViolation), then the body's.
        const before = op.op === 'execute' ? record.check(executedSegment(op)) : null;
        throw before !== null && before.code !== 'AttestationMismatch' ? before : bodyError;
      }
      record.apply(op);
    } catch (e) {
      if (!isRunRecordError(e)) throw e;
      const { length, head } = record;
      return { ok: false, error: e.code as SpecErrorCode, message: e.detail, index, length, head };
    }
  }
  return { ok: true, record };
}

function executedSegment(op: Operation & { op: 'execute' }): SegmentBody {
  return op.account === undefined
    ? { kind: 'executed', attestation: op.attestation }
    : { kind: 'executed', attestation: op.attestation, account: op.account };
}
