// A record kept in memory: the host's RecordWriter plus its segments and its attestation bundle, so that
// it can print its wire form (bundle included) and refuse an unbodied segment naming an address the bundle
// binds elsewhere.
import type { AttestationBody } from './attestation.js';
import { segmentFromBytes } from './binary.js';
import { bytesToHex, type Hex } from './bytes.js';
import { RunRecordError } from './errors.js';
import { type RecordIdentity, RecordWriter } from './host.js';
import type { RuleTracker } from './rules.js';
import { normalizeSegment } from './segment.js';
import type { RunRecord, Segment } from './types.js';
import { type VerifyOptions, verifyRecordState } from './verify.js';
import { encodeWire, type WireRecord } from './wire.js';

interface Continuation {
  readonly head: Uint8Array;
  readonly rules: RuleTracker;
  readonly segments: readonly Segment[];
  readonly attestations?: ReadonlyMap<Hex, AttestationBody> | undefined;
}

/** A record kept in memory: a RecordWriter that also holds its segments and bundle, and prints its wire form. */
export class HostRecord extends RecordWriter {
  private readonly list: Segment[];
  /** The bundle: absent until a body is appended (or the reopened record had one). */
  private bundle: Map<Hex, AttestationBody> | undefined;

  /** @internal */
  constructor(id: RecordIdentity, from?: Continuation) {
    super(id, from && { head: from.head, rules: from.rules, length: from.segments.length });
    this.list = from ? [...from.segments] : [];
    if (from?.attestations !== undefined) this.bundle = new Map(from.attestations);
  }

  get segments(): readonly Segment[] {
    return this.list;
  }

  /** The bundled bodies by address (empty when the record has no bundle). */
  get attestations(): ReadonlyMap<Hex, AttestationBody> {
    return this.bundle ?? new Map();
  }

  /**
   * An executed segment without a body naming an address the bundle already holds: that body binds it to
   * its earlier position (the record would not verify). A body naming an address an earlier segment named
   * needs no check here: its record_head would have to be a head computed from its own address, so rule 7
   * refuses it.
   */
  protected override unboundReuse(buf: Uint8Array, at: number): RunRecordError | null {
    if (this.bundle === undefined || this.bundle.size === 0) return null;
    if (!this.bundle.has(bytesToHex(buf.subarray(at, at + 32)))) return null;
    return new RunRecordError(
      'AttestationMismatch',
      'the bundled attestation of this address is bound to an earlier segment',
    );
  }

  protected override appended(segment: Segment, attestation: AttestationBody | undefined): void {
    this.list.push(segment);
    if (segment.kind === 'executed' && attestation !== undefined) {
      this.bundle ??= new Map();
      this.bundle.set(segment.attestation, attestation);
    }
  }

  protected override appendedBytes(seg: Uint8Array, head: Uint8Array): void {
    this.list.push(segmentFromBytes(seg, head));
  }

  toRecord(): RunRecord {
    const record = {
      unitId: this.unitId,
      grantsId: this.grantsId,
      segments: [...this.list],
      head: this.head,
    };
    return this.bundle === undefined ? record : { ...record, attestations: new Map(this.bundle) };
  }

  /** The wire form; `attestations` is present only if the record has a bundle. */
  toWire(): WireRecord {
    return encodeWire(this.toRecord());
  }
}

/** A new, empty record of `unitId` under `grantsId` (both addresses; `MalformedRecord` otherwise). */
export function openRecord(id: RecordIdentity): HostRecord {
  return new HostRecord(id);
}

/**
 * Continues an existing record after verifying it from genesis, its bundle included (throws its
 * RunRecordError if it does not verify, if `expectHead` is given and differs, or if `trustKeys` are given
 * and an attestation is not signed by one of them).
 */
export function reopenRecord(record: RunRecord, options: VerifyOptions = {}): HostRecord {
  const { head, rules } = verifyRecordState(record, options);
  const segments = record.segments.map((s) => normalizeSegment(s, s.head));
  return new HostRecord(record, { head, rules, segments, attestations: record.attestations });
}
