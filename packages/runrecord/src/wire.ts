// The JSON wire form. Decoding is strict: unknown kinds or keys, missing fields, bad hex, non-canonical
// decimals → MalformedRecord (with the segment index where one is to blame); a reference of neither/both
// forms → MalformedSnapshot. encode ∘ decode is the identity on well-formed records.
import * as z from 'zod';
import type { AttestationBody } from './attestation.js';
import { Bundle, encodeAttestationBody, type WireAttestations } from './bundle.js';
import type { Hex } from './bytes.js';
import { RunRecordError } from './errors.js';
import { parseJson } from './json.js';
import {
  accountSchema,
  addrSchema,
  provenanceSchema,
  reasonSchema,
  snapshotSchema,
  u64Schema,
  zodProblem,
} from './schemas.js';
import { normalizeSnapshot, snapshotFormProblem } from './snapshot.js';
import { FORMAT, type RunRecord, type Segment, type SnapshotRef } from './types.js';

export { parseJson } from './json.js';
export {
  accountSchema,
  addrSchema,
  callIdSchema,
  provenanceSchema,
  reasonSchema,
  snapshotSchema,
  u64Schema,
  zodProblem,
} from './schemas.js';

export interface WireSnapshot {
  root?: Hex;
  memory?: Hex;
  transcript?: Hex;
}
export interface WireAccount {
  dispatched: string[];
  resolved: string[];
}
export type WireSegment =
  | { kind: 'executed'; attestation: Hex; account?: WireAccount; head: Hex }
  | { kind: 'suspended'; snapshot: WireSnapshot; manifest: Hex; head: Hex }
  | {
      kind: 'resumed';
      snapshot: WireSnapshot;
      manifest: Hex;
      idle_uj: string;
      idle_provenance: 'measured' | 'estimated';
      head: Hex;
    }
  | { kind: 'closed'; reason: 'completed' | 'abandoned' | 'failed' | 'cancelled'; head: Hex };
export interface WireRecord {
  format: typeof FORMAT;
  unit_id: Hex;
  grants_id: Hex;
  segments: WireSegment[];
  head: Hex;
  /** The attestation bundle: address → body (optional; not covered by the heads). */
  attestations?: WireAttestations;
}

const segmentSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('executed'),
    attestation: addrSchema,
    account: accountSchema.optional(),
    head: addrSchema,
  }),
  z.strictObject({
    kind: z.literal('suspended'),
    snapshot: snapshotSchema,
    manifest: addrSchema,
    head: addrSchema,
  }),
  z.strictObject({
    kind: z.literal('resumed'),
    snapshot: snapshotSchema,
    manifest: addrSchema,
    idle_uj: u64Schema,
    idle_provenance: provenanceSchema,
    head: addrSchema,
  }),
  z.strictObject({ kind: z.literal('closed'), reason: reasonSchema, head: addrSchema }),
]);

const envelopeSchema = z.strictObject({
  format: z.literal(FORMAT),
  unit_id: addrSchema,
  grants_id: addrSchema,
  segments: z.array(z.unknown()),
  head: addrSchema,
  // Read by Bundle.fromWire: an object, else MalformedRecord with no index, before the first segment.
  attestations: z.unknown().optional(),
});

/** The parts of a wire record before its segments are read (they are read one by one, in order). */
export interface WireEnvelope {
  readonly unitId: Hex;
  readonly grantsId: Hex;
  readonly segments: readonly unknown[];
  readonly head: Hex;
  /** The `attestations` value as it stands on the wire (checked to be an object). */
  readonly attestations?: Readonly<Record<string, unknown>> | undefined;
}

export function decodeEnvelope(json: unknown): WireEnvelope {
  const r = envelopeSchema.safeParse(json);
  if (!r.success) throw new RunRecordError('MalformedRecord', zodProblem(r.error));
  const { unit_id, grants_id, segments, head, attestations } = r.data;
  if (!('attestations' in r.data)) return { unitId: unit_id, grantsId: grants_id, segments, head };
  Bundle.fromWire(attestations); // an object, or MalformedRecord
  return {
    unitId: unit_id,
    grantsId: grants_id,
    segments,
    head,
    attestations: attestations as Record<string, unknown>,
  };
}

/** Checks a parsed snapshot's form and returns it clean (MalformedSnapshot otherwise). */
export function checkedSnapshot(s: z.infer<typeof snapshotSchema>): SnapshotRef {
  const problem = snapshotFormProblem(s);
  if (problem) throw new RunRecordError('MalformedSnapshot', problem);
  return normalizeSnapshot(s as SnapshotRef);
}

/** One wire segment → a Segment. Throws an unindexed RunRecordError. */
export function decodeSegment(raw: unknown): Segment {
  const r = segmentSchema.safeParse(raw);
  if (!r.success) throw new RunRecordError('MalformedRecord', zodProblem(r.error));
  const s = r.data;
  switch (s.kind) {
    case 'executed':
      return s.account === undefined
        ? { kind: s.kind, attestation: s.attestation, head: s.head }
        : { kind: s.kind, attestation: s.attestation, account: s.account, head: s.head };
    case 'suspended':
      return { kind: s.kind, snapshot: checkedSnapshot(s.snapshot), manifest: s.manifest, head: s.head };
    case 'resumed':
      return {
        kind: s.kind,
        snapshot: checkedSnapshot(s.snapshot),
        manifest: s.manifest,
        idleUj: s.idle_uj,
        idleProvenance: s.idle_provenance,
        head: s.head,
      };
    case 'closed':
      return { kind: s.kind, reason: s.reason, head: s.head };
  }
}

/**
 * Strict decode of a whole wire record (structure only; `verifyRecord` checks the chain and rules 6–9). A
 * bundle entry that is not a well-formed body is MalformedRecord at the first segment naming it; one that
 * no executed segment names is MalformedRecord with no index.
 */
export function decodeWire(json: unknown): RunRecord {
  const env = decodeEnvelope(json);
  const segments = env.segments.map((raw, i) => {
    try {
      return decodeSegment(raw);
    } catch (e) {
      throw e instanceof RunRecordError ? e.at(i) : e;
    }
  });
  const record = { unitId: env.unitId, grantsId: env.grantsId, segments, head: env.head };
  if (env.attestations === undefined) return record;
  return { ...record, attestations: decodeBundle(env.attestations, segments) };
}

function decodeBundle(raw: Readonly<Record<string, unknown>>, segments: readonly Segment[]) {
  const firstNaming = new Map<Hex, number>();
  segments.forEach((s, i) => {
    if (s.kind === 'executed' && !firstNaming.has(s.attestation)) firstNaming.set(s.attestation, i);
  });
  const bundle = Bundle.fromWire(raw);
  const bodies = new Map<Hex, AttestationBody>();
  for (const address of bundle.keys()) {
    const index = firstNaming.get(address);
    if (index === undefined)
      throw new RunRecordError(
        'MalformedRecord',
        `bundle entry ${address.slice(0, 16)}… is named by no segment`,
      );
    try {
      bodies.set(address, bundle.body(address) as AttestationBody);
    } catch (e) {
      throw e instanceof RunRecordError ? e.at(index) : e;
    }
  }
  return bodies;
}

/** JSON text → RunRecord; text that is not JSON is MalformedRecord too. */
export function decodeWireJson(text: string): RunRecord {
  return decodeWire(parseJson(text));
}

function snapshotWire(s: SnapshotRef): WireSnapshot {
  if (s.transcript !== undefined) return { transcript: s.transcript };
  return s.memory === undefined ? { root: s.root } : { root: s.root, memory: s.memory };
}

export function encodeSegment(s: Segment): WireSegment {
  switch (s.kind) {
    case 'executed':
      return s.account === undefined
        ? { kind: s.kind, attestation: s.attestation, head: s.head }
        : {
            kind: s.kind,
            attestation: s.attestation,
            account: { dispatched: [...s.account.dispatched], resolved: [...s.account.resolved] },
            head: s.head,
          };
    case 'suspended':
      return { kind: s.kind, snapshot: snapshotWire(s.snapshot), manifest: s.manifest, head: s.head };
    case 'resumed':
      return {
        kind: s.kind,
        snapshot: snapshotWire(s.snapshot),
        manifest: s.manifest,
        idle_uj: s.idleUj.toString(),
        idle_provenance: s.idleProvenance,
        head: s.head,
      };
    case 'closed':
      return { kind: s.kind, reason: s.reason, head: s.head };
  }
}

/** RunRecord → its JSON wire form (a plain object; JSON.stringify it), with its bundle if it has one. */
export function encodeWire(record: RunRecord): WireRecord {
  const wire: WireRecord = {
    format: FORMAT,
    unit_id: record.unitId,
    grants_id: record.grantsId,
    segments: record.segments.map(encodeSegment),
    head: record.head,
  };
  if (record.attestations !== undefined) {
    const bundle: WireAttestations = {};
    for (const [address, body] of record.attestations) bundle[address] = encodeAttestationBody(body);
    wire.attestations = bundle;
  }
  return wire;
}
