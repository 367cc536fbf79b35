// The host side: an appendable record. Every refusal is a RunRecordError with the spec's code and the index
// the segment would have had; a refused append leaves the record and its head exactly as they were.

import { scanSegment, segmentFromBytes } from './binary.js';
import { bytesToHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes, SEG } from './chain.js';
import { isRunRecordError, type RunRecordError } from './errors.js';
import { RuleTracker } from './rules.js';
import { normalizeSegment } from './segment.js';
import type {
  Account,
  CloseReason,
  IdleProvenance,
  Phase,
  RunRecord,
  Segment,
  SegmentBody,
  SnapshotInput,
  SnapshotRef,
} from './types.js';
import { verifyRecordState } from './verify.js';
import { encodeWire, type WireRecord } from './wire.js';

export interface ExecuteInput {
  readonly attestation: Hex;
  /** Omit for "not accounted"; `{dispatched: [], resolved: []}` is "accounted, no calls". */
  readonly account?: Account;
}
export interface SuspendInput {
  readonly snapshot: SnapshotInput;
  readonly manifest: Hex;
}
export interface ResumeInput {
  readonly snapshot: SnapshotInput;
  readonly manifest: Hex;
  readonly idleUj: bigint;
  readonly idleProvenance: IdleProvenance;
}
/** One host operation, as the `build` command's ops.json lists them (after parsing). */
export type Operation =
  | ({ readonly op: 'execute' } & ExecuteInput)
  | ({ readonly op: 'suspend' } & SuspendInput)
  | ({ readonly op: 'resume' } & ResumeInput)
  | { readonly op: 'close'; readonly reason: CloseReason };

export interface RecordIdentity {
  readonly unitId: Hex;
  readonly grantsId: Hex;
}

/**
 * The running end of a record, holding O(1) state: head, length, phase and the open park. Use it where
 * segments are persisted elsewhere as they are appended; use `openRecord` to keep them in memory.
 */
export class RecordWriter {
  readonly unitId: Hex;
  readonly grantsId: Hex;
  private readonly cursor: ChainCursor;
  private readonly rules: RuleTracker;
  private headHex: Hex | null = null;
  private count: number;

  /** @internal use openWriter / openRecord / reopenRecord */
  constructor(id: RecordIdentity, from?: { head: Uint8Array; rules: RuleTracker; length: number }) {
    this.unitId = id.unitId;
    this.grantsId = id.grantsId;
    this.cursor = new ChainCursor(from?.head ?? genesisBytes(id.unitId, id.grantsId));
    this.rules = from?.rules ?? new RuleTracker();
    this.count = from?.length ?? 0;
  }

  /** The head after the last segment (the genesis head of an empty record). */
  get head(): Hex {
    this.headHex ??= bytesToHex(this.cursor.headBytes);
    return this.headHex;
  }
  get length(): number {
    return this.count;
  }
  get phase(): Phase {
    return this.rules.phase;
  }
  /** While parked: the snapshot and manifest a resume must offer. */
  get parkedAt(): { readonly snapshot: SnapshotRef; readonly manifest: Hex } | null {
    return this.rules.parked();
  }

  execute(input: ExecuteInput): Segment {
    const body: Record<string, unknown> = { kind: 'executed', attestation: input.attestation };
    if (input.account !== undefined) body.account = input.account;
    return this.append(body);
  }
  suspend(input: SuspendInput): Segment {
    return this.append({ kind: 'suspended', snapshot: input.snapshot, manifest: input.manifest });
  }
  resume(input: ResumeInput): Segment {
    return this.append({
      kind: 'resumed',
      snapshot: input.snapshot,
      manifest: input.manifest,
      idleUj: input.idleUj,
      idleProvenance: input.idleProvenance,
    });
  }
  close(reason: CloseReason): Segment {
    return this.append({ kind: 'closed', reason });
  }

  /** Applies one operation (the vocabulary of ops.json). */
  apply(op: Operation): Segment {
    switch (op.op) {
      case 'execute':
        return this.execute(op);
      case 'suspend':
        return this.suspend(op);
      case 'resume':
        return this.resume(op);
      case 'close':
        return this.close(op.reason);
    }
  }

  /** Whether an append would be accepted, and if not, the error it would throw (nothing changes). */
  check(body: SegmentBody): RunRecordError | null {
    try {
      this.prepare(body);
      return null;
    } catch (e) {
      if (isRunRecordError(e)) return e;
      throw e;
    }
  }

  /** Encodes `body` at the cursor and applies the rules; throws the indexed refusal. Changes nothing. */
  private prepare(body: unknown): void {
    const index = this.count;
    const closed = this.rules.closedError();
    if (closed) throw closed.at(index);
    try {
      this.cursor.encode(body);
    } catch (e) {
      throw isRunRecordError(e) ? e.at(index) : e;
    }
    const refused = this.rules.check(this.cursor.buf, SEG);
    if (refused) throw refused.at(index);
  }

  /** Hashes the prepared segment and moves past it, all at once. */
  private advance(): Uint8Array {
    const digest = this.cursor.digest();
    this.rules.accept(this.cursor.buf, SEG);
    this.cursor.moveTo(digest);
    this.count++;
    return digest;
  }

  /** The one way a segment enters the chain: check everything, then change state all at once. */
  protected append(body: unknown): Segment {
    this.prepare(body);
    const head = bytesToHex(this.advance());
    this.headHex = head;
    const segment = normalizeSegment(body as SegmentBody, head);
    this.appended(segment);
    return segment;
  }

  /**
   * Appends a segment given as its canonical bytes `seg(·)` (same checks and refusals as the object
   * methods; MalformedRecord for bytes that are not one well-formed segment). Returns the new head's 32
   * bytes; `head` gives its hex form when asked.
   */
  appendBytes(seg: Uint8Array): Uint8Array {
    const index = this.count;
    const closed = this.rules.closedError();
    if (closed) throw closed.at(index);
    try {
      scanSegment(seg);
    } catch (e) {
      throw isRunRecordError(e) ? e.at(index) : e;
    }
    this.cursor.load(seg);
    const refused = this.rules.check(this.cursor.buf, SEG);
    if (refused) throw refused.at(index);
    const digest = this.advance();
    this.headHex = null;
    this.appendedBytes(seg, digest);
    return digest;
  }

  protected appendedBytes(_seg: Uint8Array, _head: Uint8Array): void {}
  protected appended(_segment: Segment): void {}
}

/** A record kept in memory: a RecordWriter that also holds its segments and can print its wire form. */
export class HostRecord extends RecordWriter {
  private readonly list: Segment[];

  /** @internal */
  constructor(
    id: RecordIdentity,
    from?: { head: Uint8Array; rules: RuleTracker; segments: readonly Segment[] },
  ) {
    super(id, from && { head: from.head, rules: from.rules, length: from.segments.length });
    this.list = from ? [...from.segments] : [];
  }

  get segments(): readonly Segment[] {
    return this.list;
  }

  protected override appended(segment: Segment): void {
    this.list.push(segment);
  }

  protected override appendedBytes(seg: Uint8Array, head: Uint8Array): void {
    this.list.push(segmentFromBytes(seg, head));
  }

  toRecord(): RunRecord {
    return { unitId: this.unitId, grantsId: this.grantsId, segments: [...this.list], head: this.head };
  }

  toWire(): WireRecord {
    return encodeWire(this.toRecord());
  }
}

/** A new, empty record of `unitId` under `grantsId` (both addresses; `MalformedRecord` otherwise). */
export function openRecord(id: RecordIdentity): HostRecord {
  return new HostRecord(id);
}

/** A new record that keeps no segments in memory (constant memory in length). */
export function openWriter(id: RecordIdentity): RecordWriter {
  return new RecordWriter(id);
}

/**
 * Continues an existing record after verifying it from genesis (throws its RunRecordError if it does not
 * verify, or if `expectHead` is given and differs).
 */
export function reopenRecord(record: RunRecord, options: { expectHead?: Hex } = {}): HostRecord {
  const { head, rules } = verifyRecordState(record, options);
  const segments = record.segments.map((s) => normalizeSegment(s, s.head));
  return new HostRecord(record, { head, rules, segments });
}
