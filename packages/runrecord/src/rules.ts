// The rules a host applies on append and a verifier applies from genesis, in the spec's order, so that both
// blame the same segment with the same code:
//   RecordClosed → (MalformedSnapshot | MalformedRecord) → [HeadMismatch: verifier only] → PhaseViolation
//   → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy.
// Encoding (the malformed checks) lives in segment.ts / binary.ts; the head check in verify.ts. The rules
// here read a segment's canonical bytes `seg(·)` (already known to be well formed), so the object API and
// the byte API share them and nothing is allocated per segment: the state is the last kind and, while
// parked, a copy of the park's `snap ‖ manifest` bytes.
import { bytesToHex } from './bytes.js';
import { RunRecordError } from './errors.js';
import type { Hex, Phase, SegmentKind, SnapshotRef } from './types.js';

/** Kind codes: the first byte of `seg(·)`; 0 is genesis. */
export const GENESIS = 0;
export const EXECUTED = 1;
export const SUSPENDED = 2;
export const RESUMED = 3;
export const CLOSED = 4;

const NAMES = ['genesis', 'executed', 'suspended', 'resumed', 'closed'] as const;
export const KIND_NAMES: readonly (SegmentKind | 'genesis')[] = NAMES;

// Rule 2 as bitmasks: FOLLOWS[kind] has bit k set when `kind` may follow kind code k.
const FOLLOWS = [0, 0b01011, 0b00010, 0b00100, 0b01111];

/** Length of the `snap` that starts at `at` (well-formed bytes). */
export function snapLength(buf: Uint8Array, at: number): number {
  if (buf[at] !== 0x01) return 33;
  return buf[at + 33] === 0x01 ? 66 : 34;
}

/** Rule state of one chain: mutable, allocation-free per segment. */
export class RuleTracker {
  private lastKind = GENESIS;
  private readonly park = new Uint8Array(66 + 32);
  private parkLen = 0;

  get last(): number {
    return this.lastKind;
  }

  get phase(): Phase {
    if (this.lastKind === CLOSED) return 'closed';
    return this.lastKind === SUSPENDED ? 'parked' : 'active';
  }

  /** Rule 2, first half: nothing follows `closed`. */
  closedError(): RunRecordError | null {
    return this.lastKind === CLOSED ? new RunRecordError('RecordClosed', 'the record is closed') : null;
  }

  /** Rules 2, 3 and 5 for the well-formed `seg` bytes at `buf[at..]` (rule 4 is enforced by encoding). */
  check(buf: Uint8Array, at: number): RunRecordError | null {
    const kind = buf[at]!;
    if ((FOLLOWS[kind]! & (1 << this.lastKind)) === 0) {
      return new RunRecordError('PhaseViolation', `${NAMES[kind]} cannot follow ${NAMES[this.lastKind]}`);
    }
    if (kind !== RESUMED) return null;
    const park = this.park;
    const snap = snapLength(buf, at + 1);
    let diff = snap === snapLength(park, 0) ? 0 : 1;
    for (let i = 0; i < snap && diff === 0; i++) diff |= buf[at + 1 + i]! ^ park[i]!;
    if (diff !== 0) {
      return new RunRecordError(
        'SnapshotMismatch',
        'the resumed snapshot is not the one recorded at suspension',
      );
    }
    for (let i = snap; i < snap + 32; i++) diff |= buf[at + 1 + i]! ^ park[i]!;
    if (diff !== 0) {
      return new RunRecordError(
        'ManifestMismatch',
        'the resumed manifest is not the one recorded at suspension',
      );
    }
    let idle = 0;
    for (let i = snap + 32; i < snap + 40; i++) idle |= buf[at + 1 + i]!;
    if (idle === 0) return new RunRecordError('ZeroIdleEnergy', 'a park draws power: idle_uj must not be 0');
    return null;
  }

  /** The state after the accepted `seg` bytes at `buf[at..]`. */
  accept(buf: Uint8Array, at: number): void {
    const kind = buf[at]!;
    this.lastKind = kind;
    if (kind === SUSPENDED) {
      this.parkLen = snapLength(buf, at + 1) + 32;
      this.park.set(buf.subarray(at + 1, at + 1 + this.parkLen), 0);
    } else {
      this.parkLen = 0;
    }
  }

  /** While parked: the snapshot and manifest a resume must offer. */
  parked(): { readonly snapshot: SnapshotRef; readonly manifest: Hex } | null {
    if (this.lastKind !== SUSPENDED) return null;
    const p = this.park;
    const hex = (from: number) => bytesToHex(p.subarray(from, from + 32));
    const snap = snapLength(p, 0);
    let snapshot: SnapshotRef;
    if (p[0] === 0x02) snapshot = { transcript: hex(1) };
    else snapshot = snap === 66 ? { root: hex(1), memory: hex(34) } : { root: hex(1) };
    return Object.freeze({ snapshot: Object.freeze(snapshot), manifest: hex(snap) });
  }

  copy(): RuleTracker {
    const r = new RuleTracker();
    r.lastKind = this.lastKind;
    r.parkLen = this.parkLen;
    r.park.set(this.park);
    return r;
  }
}
