// Canonical segment bytes `seg(·)`. Validation and encoding are one pass: a segment that cannot be
// encoded is refused (`MalformedRecord`, or `MalformedSnapshot` for a reference of neither/both forms)
// before anything is hashed.
import { ByteWriter, type Hex, isU64, isWellFormedString } from './bytes.js';
import { RunRecordError } from './errors.js';
import { normalizeSnapshot, writeSnapshot } from './snapshot.js';
import {
  type Account,
  CLOSE_REASON_BYTE,
  type CloseReason,
  IDLE_PROVENANCE_BYTE,
  type IdleProvenance,
  type Segment,
  type SegmentBody,
  type SnapshotRef,
} from './types.js';

const malformed = (why: string) => new RunRecordError('MalformedRecord', why);

function prop(o: object, k: string): unknown {
  return (o as Record<string, unknown>)[k];
}

function writeCalls(w: ByteWriter, calls: unknown, name: string): void {
  if (!Array.isArray(calls)) throw malformed(`account.${name} is not a list`);
  w.u32(calls.length);
  for (const id of calls) {
    if (!isWellFormedString(id))
      throw malformed(`account.${name} holds a call id that is not a well-formed string`);
    w.str(id);
  }
}

export function writeAccount(w: ByteWriter, account: unknown): void {
  if (typeof account !== 'object' || account === null || Array.isArray(account)) {
    throw malformed('account is not an object');
  }
  w.u8(0xac);
  writeCalls(w, prop(account, 'dispatched'), 'dispatched');
  writeCalls(w, prop(account, 'resolved'), 'resolved');
}

function writePark(w: ByteWriter, body: object): void {
  const snap = writeSnapshot(w, prop(body, 'snapshot'));
  if (snap === 'bad-field') throw malformed('snapshot is not a reference of addresses');
  if (!w.addr(prop(body, 'manifest'))) throw malformed('manifest is not an address');
  if (prop(body, 'kind') === 'resumed') {
    const idle = prop(body, 'idleUj');
    if (!isU64(idle)) throw malformed('idleUj is not a u64 bigint');
    const provenance = prop(body, 'idleProvenance');
    if (typeof provenance !== 'string' || !Object.hasOwn(IDLE_PROVENANCE_BYTE, provenance)) {
      throw malformed('idleProvenance is not measured|estimated');
    }
    w.u64(idle);
    w.u8(IDLE_PROVENANCE_BYTE[provenance as IdleProvenance]);
  }
  // Field problems first (above), then the form: neither/both/transcript+memory is MalformedSnapshot.
  if (snap === 'bad-form')
    throw new RunRecordError('MalformedSnapshot', 'snapshot names neither or both forms');
}

/** Appends `seg(body)` to `w`. Throws an unindexed RunRecordError if the body cannot be encoded. */
export function encodeSegmentInto(w: ByteWriter, body: unknown): void {
  if (typeof body !== 'object' || body === null) throw malformed('segment is not an object');
  switch (prop(body, 'kind')) {
    case 'executed': {
      w.u8(0x01);
      if (!w.addr(prop(body, 'attestation'))) throw malformed('attestation is not an address');
      const account = prop(body, 'account');
      if (account !== undefined) writeAccount(w, account);
      return;
    }
    case 'suspended':
      w.u8(0x02);
      writePark(w, body);
      return;
    case 'resumed':
      w.u8(0x03);
      writePark(w, body);
      return;
    case 'closed': {
      const reason = prop(body, 'reason');
      if (typeof reason !== 'string' || !Object.hasOwn(CLOSE_REASON_BYTE, reason)) {
        throw malformed('reason is not completed|abandoned|failed|cancelled');
      }
      w.u8(0x04);
      w.u8(CLOSE_REASON_BYTE[reason as CloseReason]);
      return;
    }
    default:
      throw malformed('unknown segment kind');
  }
}

/** `seg(body)` as fresh bytes (for conformance vectors and tests). */
export function segmentBytes(body: SegmentBody): Uint8Array {
  const w = new ByteWriter(128);
  encodeSegmentInto(w, body);
  return w.take();
}

function copyAccount(a: Account): Account {
  return Object.freeze({
    dispatched: Object.freeze(a.dispatched.slice()),
    resolved: Object.freeze(a.resolved.slice()),
  });
}

/** The frozen segment of an encodable body: only its kind's fields, and `head` (call after encoding). */
export function normalizeSegment(b: SegmentBody, head: Hex): Segment {
  switch (b.kind) {
    case 'executed':
      return Object.freeze(
        b.account === undefined
          ? { kind: b.kind, attestation: b.attestation, head }
          : { kind: b.kind, attestation: b.attestation, account: copyAccount(b.account), head },
      );
    case 'suspended':
      return Object.freeze({
        kind: b.kind,
        snapshot: normalizeSnapshot(b.snapshot),
        manifest: b.manifest,
        head,
      });
    case 'resumed':
      return Object.freeze({
        kind: b.kind,
        snapshot: normalizeSnapshot(b.snapshot as SnapshotRef),
        manifest: b.manifest,
        idleUj: b.idleUj,
        idleProvenance: b.idleProvenance,
        head,
      });
    case 'closed':
      return Object.freeze({ kind: b.kind, reason: b.reason, head });
  }
}
