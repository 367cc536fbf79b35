// Verification from genesis. `Verifier` is the streaming form (constant memory in the number of segments:
// it keeps the head, the rule state, the idle sum and the account walk); `verifyRecord` / `verifyWire` drive
// it over a whole record. Checks per segment, in the spec's order: RecordClosed → MalformedSnapshot /
// MalformedRecord → HeadMismatch → PhaseViolation → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy;
// after the last: the record's head field, then the caller's expected head (HeadMismatch, no index).
import { type AccountVerdict, AccountWalker } from './accounts.js';
import { bytesToHex, compareDigestHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes } from './chain.js';
import { isRunRecordError, RunRecordError, type SpecErrorCode } from './errors.js';
import type { RecordIdentity } from './host.js';
import { advanceState, checkOpen, checkTransition, GENESIS_STATE, phaseOf, type RuleState } from './rules.js';
import type { Phase, RunRecord, Segment, SegmentBody } from './types.js';
import { decodeEnvelope, decodeSegment } from './wire.js';

export type VerifyResult =
  | {
      readonly ok: true;
      readonly head: Hex;
      readonly length: number;
      readonly phase: Phase;
      readonly idleUj: bigint;
      readonly account: AccountVerdict;
    }
  | { readonly ok: false; readonly error: SpecErrorCode; readonly index?: number; readonly message: string };

export interface FinishOptions {
  /** The record's own `head` field, if it has one: must equal the last segment's head. */
  readonly head?: Hex;
  /** A head the caller expects (e.g. one it stored earlier). */
  readonly expectHead?: Hex;
}

export class Verifier {
  private readonly cursor: ChainCursor;
  private state: RuleState = GENESIS_STATE;
  private count = 0;
  private idle = 0n;
  private readonly accounts = new AccountWalker();
  private failure: RunRecordError | null = null;

  /** Throws MalformedRecord if either id is not an address. */
  constructor(id: RecordIdentity) {
    this.cursor = new ChainCursor(genesisBytes(id.unitId, id.grantsId));
  }

  /** Segments accepted so far. */
  get length(): number {
    return this.count;
  }
  get head(): Hex {
    return bytesToHex(this.cursor.headBytes);
  }
  get phase(): Phase {
    return phaseOf(this.state);
  }
  get error(): RunRecordError | null {
    return this.failure;
  }

  private fail(e: unknown, index?: number): false {
    if (!isRunRecordError(e)) throw e;
    this.failure = index === undefined ? e : e.at(index);
    return false;
  }

  /** Verifies the next segment. Returns false (and ignores later pushes) once verification has failed. */
  push(segment: Segment): boolean {
    if (this.failure) return false;
    const index = this.count;
    const closed = checkOpen(this.state);
    if (closed) return this.fail(closed, index);
    let digest: Uint8Array;
    try {
      digest = this.cursor.peek(segment);
    } catch (e) {
      return this.fail(e, index);
    }
    const same = compareDigestHex(digest, segment.head);
    if (same !== 1) {
      return this.fail(
        same === 0
          ? new RunRecordError('HeadMismatch', 'the recorded head does not recompute')
          : new RunRecordError('MalformedRecord', 'head is not an address'),
        index,
      );
    }
    const body = segment as SegmentBody;
    const refused = checkTransition(this.state, body);
    if (refused) return this.fail(refused, index);
    this.cursor.moveTo(digest);
    this.state = advanceState(this.state, body);
    if (body.kind === 'resumed') this.idle += body.idleUj;
    this.accounts.push(index, body);
    this.count++;
    return true;
  }

  /** Verifies the next segment in its wire (JSON) form. */
  pushWire(raw: unknown): boolean {
    if (this.failure) return false;
    const closed = checkOpen(this.state);
    if (closed) return this.fail(closed, this.count);
    let segment: Segment;
    try {
      segment = decodeSegment(raw);
    } catch (e) {
      return this.fail(e, this.count);
    }
    return this.push(segment);
  }

  /** The verdict, once every segment has been pushed. */
  finish(options: FinishOptions = {}): VerifyResult {
    const e = this.failure ?? this.finalHeadProblem(options);
    if (e) {
      const error = e.code as SpecErrorCode;
      return e.index === undefined
        ? { ok: false, error, message: e.detail }
        : { ok: false, error, index: e.index, message: e.detail };
    }
    return {
      ok: true,
      head: this.head,
      length: this.count,
      phase: this.phase,
      idleUj: this.idle,
      account: this.accounts.verdict(),
    };
  }

  private finalHeadProblem({ head, expectHead }: FinishOptions): RunRecordError | null {
    const h = this.cursor.headBytes;
    if (head !== undefined) {
      const same = compareDigestHex(h, head);
      if (same === -1) return new RunRecordError('MalformedRecord', "the record's head is not an address");
      if (same === 0)
        return new RunRecordError('HeadMismatch', "the record's head is not its last segment's head");
    }
    if (expectHead !== undefined && compareDigestHex(h, expectHead) !== 1) {
      return new RunRecordError('HeadMismatch', 'the head is not the expected head');
    }
    return null;
  }

  /** @internal the state a host continues from */
  continuation(): { head: Uint8Array; state: RuleState } {
    return { head: this.cursor.headBytes.slice(), state: this.state };
  }
}

function malformed(e: unknown): VerifyResult {
  if (!isRunRecordError(e)) throw e;
  return { ok: false, error: e.code as SpecErrorCode, message: e.detail };
}

function run(
  record: RunRecord,
  options: { expectHead?: Hex },
): { v: Verifier; result: VerifyResult } | VerifyResult {
  let v: Verifier;
  try {
    v = new Verifier(record);
  } catch (e) {
    return malformed(e);
  }
  if (!Array.isArray(record.segments))
    return malformed(new RunRecordError('MalformedRecord', 'no segment list'));
  for (const s of record.segments) if (!v.push(s)) break;
  return { v, result: v.finish({ head: record.head, ...options }) };
}

/** Verifies a decoded record from genesis, optionally against an expected head. */
export function verifyRecord(record: RunRecord, options: { expectHead?: Hex } = {}): VerifyResult {
  const r = run(record, options);
  return 'v' in r ? r.result : r;
}

/** Verifies a record in its wire form, reading segments one by one (the spec's order of checks). */
export function verifyWire(json: unknown, options: { expectHead?: Hex } = {}): VerifyResult {
  let env: ReturnType<typeof decodeEnvelope>;
  let v: Verifier;
  try {
    env = decodeEnvelope(json);
    v = new Verifier(env);
  } catch (e) {
    return malformed(e);
  }
  for (const raw of env.segments) if (!v.pushWire(raw)) break;
  return v.finish({ head: env.head, ...options });
}

/** @internal verify and return the state to continue from; throws the failure as a RunRecordError. */
export function verifyRecordState(record: RunRecord, options: { expectHead?: Hex }) {
  const r = run(record, options);
  const result = 'v' in r ? r.result : r;
  if (!result.ok) throw new RunRecordError(result.error, result.message, result.index);
  return (r as { v: Verifier }).v.continuation();
}
