// The host side: an appendable record. Every refusal is a RunRecordError with the spec's code and the index
// the segment would have had; a refused append leaves the record and its head exactly as they were.
import { bytesToHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes } from './chain.js';
import { isRunRecordError, type RunRecordError } from './errors.js';
import { advanceState, checkOpen, checkTransition, GENESIS_STATE, phaseOf, type RuleState } from './rules.js';
import { normalizeBody } from './segment.js';
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
  private state: RuleState;
  private currentHead: Hex;
  private count: number;

  /** @internal use openWriter / openRecord / reopenRecord */
  constructor(id: RecordIdentity, from?: { head: Uint8Array; state: RuleState; length: number }) {
    this.unitId = id.unitId;
    this.grantsId = id.grantsId;
    const head = from?.head ?? genesisBytes(id.unitId, id.grantsId);
    this.cursor = new ChainCursor(head);
    this.currentHead = bytesToHex(head);
    this.state = from?.state ?? GENESIS_STATE;
    this.count = from?.length ?? 0;
  }

  /** The head after the last segment (the genesis head of an empty record). */
  get head(): Hex {
    return this.currentHead;
  }
  get length(): number {
    return this.count;
  }
  get phase(): Phase {
    return phaseOf(this.state);
  }
  /** While parked: the snapshot and manifest a resume must offer. */
  get parkedAt(): { readonly snapshot: SnapshotRef; readonly manifest: Hex } | null {
    return this.state.parked;
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

  private prepare(body: unknown): { digest: Uint8Array; clean: SegmentBody } {
    const index = this.count;
    const closed = checkOpen(this.state);
    if (closed) throw closed.at(index);
    let digest: Uint8Array;
    try {
      digest = this.cursor.peek(body);
    } catch (e) {
      throw isRunRecordError(e) ? e.at(index) : e;
    }
    const clean = normalizeBody(body as SegmentBody);
    const refused = checkTransition(this.state, clean);
    if (refused) throw refused.at(index);
    return { digest, clean };
  }

  /** The one way a segment enters the chain: check everything, then change state all at once. */
  protected append(body: unknown): Segment {
    const { digest, clean } = this.prepare(body);
    this.cursor.moveTo(digest);
    this.currentHead = bytesToHex(digest);
    this.state = advanceState(this.state, clean);
    this.count++;
    const segment = Object.freeze({ ...clean, head: this.currentHead }) as Segment;
    this.appended(segment);
    return segment;
  }

  protected appended(_segment: Segment): void {}
}

/** A record kept in memory: a RecordWriter that also holds its segments and can print its wire form. */
export class HostRecord extends RecordWriter {
  private readonly list: Segment[];

  /** @internal */
  constructor(
    id: RecordIdentity,
    from?: { head: Uint8Array; state: RuleState; segments: readonly Segment[] },
  ) {
    super(id, from && { head: from.head, state: from.state, length: from.segments.length });
    this.list = from ? [...from.segments] : [];
  }

  get segments(): readonly Segment[] {
    return this.list;
  }

  protected override appended(segment: Segment): void {
    this.list.push(segment);
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
  const { head, state } = verifyRecordState(record, options);
  const segments = record.segments.map(
    (s) => Object.freeze({ ...normalizeBody(s), head: s.head }) as Segment,
  );
  return new HostRecord(record, { head, state, segments });
}
