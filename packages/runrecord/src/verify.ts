// Verification from genesis. `Verifier` is the streaming form (constant memory in the number of segments:
// it keeps the head, the rule state, the idle sum and the account walk); `verifyRecord` / `verifyWire` drive
// it over a whole record. Checks per segment, in the spec's order: RecordClosed → MalformedSnapshot /
// MalformedRecord → HeadMismatch → PhaseViolation → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy;
// after the last: the record's head field, then the caller's expected head (HeadMismatch, no index).
import { type AccountVerdict, AccountWalker } from './accounts.js';
import { IdleSum, scanSegment } from './binary.js';
import { bytesToHex, compareDigestHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes, SEG } from './chain.js';
import { isRunRecordError, RunRecordError, type SpecErrorCode } from './errors.js';
import type { RecordIdentity } from './host.js';
import { EXECUTED, RESUMED, RuleTracker } from './rules.js';
import type { Phase, RunRecord, Segment } from './types.js';
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
  private readonly rules = new RuleTracker();
  private count = 0;
  private readonly idle = new IdleSum();
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
    return this.rules.phase;
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
    const closed = this.rules.closedError();
    if (closed) return this.fail(closed, index);
    try {
      this.cursor.encode(segment);
    } catch (e) {
      return this.fail(e, index);
    }
    const digest = this.cursor.digest();
    const same = compareDigestHex(digest, segment.head);
    if (same !== 1) {
      return this.fail(
        same === 0
          ? new RunRecordError('HeadMismatch', 'the recorded head does not recompute')
          : new RunRecordError('MalformedRecord', 'head is not an address'),
        index,
      );
    }
    return this.advance(digest, index);
  }

  /**
   * Verifies the next segment given as its canonical bytes `seg(·)` and the 32-byte head recorded after
   * it: the same checks, in the same order, as `push` (a binary log needs no hex at all).
   */
  pushBytes(seg: Uint8Array, head: Uint8Array): boolean {
    if (this.failure) return false;
    const index = this.count;
    const closed = this.rules.closedError();
    if (closed) return this.fail(closed, index);
    try {
      scanSegment(seg);
    } catch (e) {
      return this.fail(e, index);
    }
    if (!(head instanceof Uint8Array) || head.length !== 32)
      return this.fail(new RunRecordError('MalformedRecord', 'head is not 32 bytes'), index);
    this.cursor.load(seg);
    const digest = this.cursor.digest();
    let diff = 0;
    for (let i = 0; i < 32; i++) diff |= digest[i]! ^ head[i]!;
    if (diff !== 0)
      return this.fail(new RunRecordError('HeadMismatch', 'the recorded head does not recompute'), index);
    return this.advance(digest, index);
  }

  /**
   * Rules 2, 3, 5 on the segment at SEG (both entry points have put its canonical bytes there); on success
   * the cursor, rule state, idle sum and account walk move past it.
   */
  private advance(digest: Uint8Array, index: number): boolean {
    const buf = this.cursor.buf;
    const refused = this.rules.check(buf, SEG);
    if (refused) return this.fail(refused, index);
    this.rules.accept(buf, SEG);
    this.cursor.moveTo(digest);
    const kind = buf[SEG];
    if (kind === RESUMED) this.idle.add(buf, SEG);
    else if (kind === EXECUTED) this.accounts.pushBytes(index, buf, SEG, this.cursor.end);
    this.count++;
    return true;
  }

  /** Verifies the next segment in its wire (JSON) form. */
  pushWire(raw: unknown): boolean {
    if (this.failure) return false;
    const closed = this.rules.closedError();
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
      idleUj: this.idle.total,
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
  continuation(): { head: Uint8Array; rules: RuleTracker } {
    return { head: this.cursor.headBytes.slice(), rules: this.rules.copy() };
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
