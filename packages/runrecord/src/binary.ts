// The byte-level entry points read segments in their canonical form `seg(·)` (the spec's bytes, which is
// what a binary log of a record stores). Reading is as strict as the wire form: an unknown kind, a
// truncated or over-long segment, an unknown tag/flag/reason/provenance byte or a call id that is not UTF-8
// is `MalformedRecord`, refused before anything is hashed.
import { bytesToHex } from './bytes.js';
import { RunRecordError } from './errors.js';
import { CLOSED, EXECUTED, RESUMED, SUSPENDED, snapLength } from './rules.js';
import type { Account, CloseReason, IdleProvenance, Segment } from './types.js';
import { CLOSE_REASONS, IDLE_PROVENANCES } from './types.js';

const malformed = (why: string) => new RunRecordError('MalformedRecord', why);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/** Offset after `u32 n ‖ str×n` at `at`, or -1 if it overruns `end` or a string is not UTF-8. */
function scanCalls(b: Uint8Array, at: number, end: number): number {
  if (at + 4 > end) return -1;
  const n = u32(b, at);
  let p = at + 4;
  for (let i = 0; i < n; i++) {
    if (p + 4 > end) return -1;
    const len = u32(b, p);
    p += 4;
    if (len > end - p) return -1;
    let high = 0;
    for (let j = p; j < p + len; j++) high |= b[j]!;
    if (high >= 0x80) {
      try {
        utf8.decode(b.subarray(p, p + len));
      } catch {
        return -1;
      }
    }
    p += len;
  }
  return p;
}

/** Checks that `seg` is one well-formed canonical segment; returns its kind code. Throws MalformedRecord. */
export function scanSegment(seg: Uint8Array): number {
  const end = seg.length;
  const kind = end > 0 ? seg[0]! : 0;
  switch (kind) {
    case EXECUTED: {
      if (end === 33) return kind;
      if (end < 34 || seg[33] !== 0xac) throw malformed('executed segment is not attestation[‖ account]');
      const p = scanCalls(seg, 34, end);
      if (p < 0 || scanCalls(seg, p, end) !== end) throw malformed('account is not dispatched ‖ resolved');
      return kind;
    }
    case SUSPENDED:
    case RESUMED: {
      const tag = end > 1 ? seg[1] : 0;
      if (tag !== 0x01 && tag !== 0x02) throw malformed('snapshot tag is not image|transcript');
      if (tag === 0x01 && end > 34 && seg[34]! > 0x01) throw malformed('memory flag is not 0|1');
      const fixed = 1 + (end > 34 ? snapLength(seg, 1) : 34) + 32;
      if (end !== (kind === SUSPENDED ? fixed : fixed + 9))
        throw malformed('park segment has a wrong length');
      if (kind === RESUMED && (seg[end - 1]! < 1 || seg[end - 1]! > 2))
        throw malformed('idle provenance is not measured|estimated');
      return kind;
    }
    case CLOSED:
      if (end !== 2 || seg[1]! < 1 || seg[1]! > 4) throw malformed('closed segment is not 0x04 ‖ reason');
      return kind;
    default:
      throw malformed('unknown segment kind');
  }
}

/** A call id at `at` (length-prefixed, already scanned). ASCII ids, the usual case, skip TextDecoder. */
function callId(b: Uint8Array, at: number, len: number): string {
  if (len <= 32) {
    let s = '';
    let high = 0;
    for (let j = at; j < at + len; j++) {
      high |= b[j]!;
      s += String.fromCharCode(b[j]!);
    }
    if (high < 0x80) return s;
  }
  return utf8.decode(b.subarray(at, at + len));
}

/** Calls `visit` with each id of a `u32 n ‖ str×n` list at `at`; returns the offset after it. */
export function readCalls(b: Uint8Array, at: number, visit: (id: string) => boolean): number {
  const n = u32(b, at);
  let p = at + 4;
  for (let i = 0; i < n; i++) {
    const len = u32(b, p);
    if (!visit(callId(b, p + 4, len))) return -1;
    p += 4 + len;
  }
  return p;
}

function readList(b: Uint8Array, at: number): { ids: string[]; end: number } {
  const ids: string[] = [];
  const end = readCalls(b, at, (id) => ids.push(id) > 0);
  return { ids, end };
}

function idle(b: Uint8Array, at: number): bigint {
  return new DataView(b.buffer, b.byteOffset + at, 8).getBigUint64(0, false);
}

/**
 * Σ idle_uj without a BigInt per segment: values below 2^53 are summed as exact doubles and folded into the
 * bigint total before the running sum could lose precision.
 */
export class IdleSum {
  private big = 0n;
  private small = 0;

  /** Adds the idle energy of the well-formed resumed segment at `b[at..]`. */
  add(b: Uint8Array, at: number): void {
    const p = at + 1 + snapLength(b, at + 1) + 32;
    const hi = u32(b, p);
    const lo = u32(b, p + 4);
    if (hi >= 0x200000) {
      this.big += (BigInt(hi) << 32n) | BigInt(lo);
      return;
    }
    const v = hi * 4294967296 + lo;
    if (this.small + v > Number.MAX_SAFE_INTEGER) {
      this.big += BigInt(this.small);
      this.small = 0;
    }
    this.small += v;
  }

  get total(): bigint {
    return this.big + BigInt(this.small);
  }
}

/** The idle energy of a well-formed resumed segment. */
export function idleOf(seg: Uint8Array): bigint {
  return idle(seg, 1 + snapLength(seg, 1) + 32);
}

/** A scanned, well-formed `seg` and its head → the Segment object (frozen, like the host's). */
export function segmentFromBytes(seg: Uint8Array, head: Uint8Array): Segment {
  const hex = (at: number) => bytesToHex(seg.subarray(at, at + 32));
  const h = bytesToHex(head);
  const kind = seg[0];
  if (kind === EXECUTED) {
    if (seg.length === 33) return Object.freeze({ kind: 'executed', attestation: hex(1), head: h });
    const d = readList(seg, 34);
    const r = readList(seg, d.end);
    const account: Account = Object.freeze({
      dispatched: Object.freeze(d.ids),
      resolved: Object.freeze(r.ids),
    });
    return Object.freeze({ kind: 'executed', attestation: hex(1), account, head: h });
  }
  if (kind === CLOSED) {
    return Object.freeze({ kind: 'closed', reason: CLOSE_REASONS[seg[1]! - 1] as CloseReason, head: h });
  }
  const snap = snapLength(seg, 1);
  const snapshot = Object.freeze(
    seg[1] === 0x02
      ? { transcript: hex(2) }
      : snap === 66
        ? { root: hex(2), memory: hex(35) }
        : { root: hex(2) },
  );
  const manifest = hex(1 + snap);
  if (kind === SUSPENDED) return Object.freeze({ kind: 'suspended', snapshot, manifest, head: h });
  return Object.freeze({
    kind: 'resumed',
    snapshot,
    manifest,
    idleUj: idleOf(seg),
    idleProvenance: IDLE_PROVENANCES[seg[seg.length - 1]! - 1] as IdleProvenance,
    head: h,
  });
}
