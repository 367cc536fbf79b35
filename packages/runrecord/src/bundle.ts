// The attestation bundle: the wire form's optional top-level `attestations` object, keyed by attestation
// address, each value a body (the attested fields and an optional signature). Strict like the rest of the
// wire form: a body has exactly the spec's fields (unknown fields, `"audit_prev": null`, or a signature that
// is not exactly {"alg":"ed25519","key":64 hex,"sig":128 hex} are malformed), u64 fields are canonical
// decimals below 2^64, `exit_code` is a JSON integer in i32 range.
import * as z from 'zod';
import {
  type AttestationBody,
  type AttestationSignature,
  attestationAddress,
  attestationBytes,
  type Outcome,
} from './attestation.js';
import { type Hex, isAddr, isWellFormedString } from './bytes.js';
import { isRunRecordError, RunRecordError } from './errors.js';
import { addrSchema, provenanceSchema, u64Schema, zodProblem } from './schemas.js';
import type { IdleProvenance } from './types.js';

export interface WireAttestationSignature {
  alg: 'ed25519';
  key: Hex;
  sig: Hex;
}
/** One bundled body in the wire form (u64 fields are decimal strings). */
export interface WireAttestation {
  unit_id: Hex;
  grants_id: Hex;
  record_head: Hex;
  started_ms: string;
  ended_ms: string;
  active_uj: string;
  provenance: IdleProvenance;
  meter: string;
  journal_root: Hex;
  outcome: Outcome;
  exit_code: number;
  audit_prev?: Hex;
  signature?: WireAttestationSignature;
}
/** The wire form's `attestations` object: address → body. */
export type WireAttestations = Record<Hex, WireAttestation>;

const SIG_HEX = /^[0-9a-f]{128}$/;
const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

export const signatureSchema = z.strictObject({
  alg: z.literal('ed25519'),
  key: addrSchema,
  sig: z.string().regex(SIG_HEX, 'not a signature (128 lowercase hex)'),
});

export const wireAttestationSchema = z.strictObject({
  unit_id: addrSchema,
  grants_id: addrSchema,
  record_head: addrSchema,
  started_ms: u64Schema,
  ended_ms: u64Schema,
  active_uj: u64Schema,
  provenance: provenanceSchema,
  meter: z.string().refine(isWellFormedString, 'not a well-formed string'),
  journal_root: addrSchema,
  outcome: z.enum(['succeeded', 'failed', 'yielded', 'cancelled']),
  exit_code: z.number().int().min(I32_MIN).max(I32_MAX),
  audit_prev: addrSchema.optional(),
  signature: signatureSchema.optional(),
});

/** A wire body → an AttestationBody (frozen). `MalformedRecord` if it is not exactly a well-formed body. */
export function decodeAttestationBody(json: unknown): AttestationBody {
  const r = wireAttestationSchema.safeParse(json);
  if (!r.success) throw new RunRecordError('MalformedRecord', `attestation ${zodProblem(r.error)}`);
  const b = r.data;
  return Object.freeze({
    unitId: b.unit_id,
    grantsId: b.grants_id,
    recordHead: b.record_head,
    startedMs: b.started_ms,
    endedMs: b.ended_ms,
    activeUj: b.active_uj,
    provenance: b.provenance,
    meter: b.meter,
    journalRoot: b.journal_root,
    outcome: b.outcome,
    exitCode: b.exit_code,
    ...(b.audit_prev === undefined ? {} : { auditPrev: b.audit_prev }),
    ...(b.signature === undefined ? {} : { signature: Object.freeze({ ...b.signature }) }),
  });
}

/** An AttestationBody → its wire form (a plain JSON value). */
export function encodeAttestationBody(body: AttestationBody): WireAttestation {
  const wire: WireAttestation = {
    unit_id: body.unitId,
    grants_id: body.grantsId,
    record_head: body.recordHead,
    started_ms: body.startedMs.toString(),
    ended_ms: body.endedMs.toString(),
    active_uj: body.activeUj.toString(),
    provenance: body.provenance,
    meter: body.meter,
    journal_root: body.journalRoot,
    outcome: body.outcome,
    exit_code: body.exitCode,
  };
  if (body.auditPrev !== undefined) wire.audit_prev = body.auditPrev;
  if (body.signature !== undefined) {
    const { alg, key, sig } = body.signature;
    wire.signature = { alg, key, sig };
  }
  return wire;
}

/** Bodies → the wire form's `attestations` object, each keyed by its own address (in the given order). */
export function encodeBundle(bodies: Iterable<AttestationBody>): WireAttestations {
  const out: WireAttestations = {};
  for (const body of bodies) out[attestationAddress(body)] = encodeAttestationBody(body);
  return out;
}

function isSignature(s: unknown): s is AttestationSignature {
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return false;
  const keys = Object.keys(s);
  const o = s as Record<string, unknown>;
  return (
    keys.length === 3 &&
    o.alg === 'ed25519' &&
    isAddr(o.key) &&
    typeof o.sig === 'string' &&
    SIG_HEX.test(o.sig)
  );
}

/**
 * The bytes `att` of a body given as an object (the host's input, a decoded bundle); `MalformedRecord` if a
 * field cannot be encoded or its signature is not exactly {alg, key, sig}.
 */
export function bodyBytes(body: unknown): Uint8Array {
  if (typeof body !== 'object' || body === null)
    throw new RunRecordError('MalformedRecord', 'attestation body is not an object');
  const signature = (body as AttestationBody).signature;
  if (signature !== undefined && !isSignature(signature))
    throw new RunRecordError('MalformedRecord', 'attestation signature is not {alg: ed25519, key, sig}');
  try {
    return attestationBytes(body as AttestationBody);
  } catch (e) {
    if (!isRunRecordError(e)) throw e;
    throw new RunRecordError('MalformedRecord', `attestation ${e.detail}`);
  }
}

/** What a verifier reads a bundle from: decoded bodies, or the wire form's `attestations` object. */
export type BundleInput = ReadonlyMap<Hex, AttestationBody> | Readonly<Record<string, unknown>>;

/**
 * A bundle as a verifier reads it: entries by address, each decoded only when a segment names it (a
 * malformed entry is blamed on the first segment naming it).
 */
export class Bundle {
  private constructor(
    private readonly entries: ReadonlyMap<string, unknown>,
    private readonly decoded: boolean,
  ) {}

  /** The wire form's `attestations` value: an object (`{}` included); anything else is MalformedRecord. */
  static fromWire(raw: unknown): Bundle {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new RunRecordError('MalformedRecord', 'attestations is not an object');
    // Object.keys, not a zod record: JSON.parse makes "__proto__" an own key, and it must be seen.
    const entries = new Map<string, unknown>();
    for (const k of Object.keys(raw)) entries.set(k, (raw as Record<string, unknown>)[k]);
    return new Bundle(entries, false);
  }

  static from(input: BundleInput): Bundle {
    return input instanceof Map
      ? new Bundle(input as ReadonlyMap<string, unknown>, true)
      : Bundle.fromWire(input);
  }

  get size(): number {
    return this.entries.size;
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** The body bundled under `address` (undefined if none); MalformedRecord if it is not a body. */
  body(address: Hex): AttestationBody | undefined {
    if (!this.entries.has(address)) return undefined;
    const raw = this.entries.get(address);
    return this.decoded ? (raw as AttestationBody) : decodeAttestationBody(raw);
  }
}

/** A frozen copy of a body with only its own fields (call after `bodyBytes` accepted it). */
export function normalizeBody(b: AttestationBody): AttestationBody {
  return Object.freeze({
    unitId: b.unitId,
    grantsId: b.grantsId,
    recordHead: b.recordHead,
    startedMs: b.startedMs,
    endedMs: b.endedMs,
    activeUj: b.activeUj,
    provenance: b.provenance,
    meter: b.meter,
    journalRoot: b.journalRoot,
    outcome: b.outcome,
    exitCode: b.exitCode,
    ...(b.auditPrev === undefined ? {} : { auditPrev: b.auditPrev }),
    ...(b.signature === undefined
      ? {}
      : { signature: Object.freeze({ alg: b.signature.alg, key: b.signature.key, sig: b.signature.sig }) }),
  });
}
