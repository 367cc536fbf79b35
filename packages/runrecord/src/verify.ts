// Verification from genesis. `Verifier` is the streaming form (constant memory in the number of segments:
// it keeps the head, the rule state, the idle sum and the account walk — plus, for a record with a bundle,
// the set of bundled addresses named so far); `verifyRecord` / `verifyWire` drive it over a whole record.
// Checks per segment, in the spec's order: RecordClosed → MalformedSnapshot / MalformedRecord →
// HeadMismatch → PhaseViolation → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy, and for an executed
// segment rules 6–9 right after PhaseViolation (attest-rules.ts); after the last: a bundle entry no segment
// names (MalformedRecord), the record's head field, then the caller's expected head (HeadMismatch, no index).
import { type AccountVerdict, AccountWalker } from './accounts.js';
import { AttestationTracker, type RecordCost } from './attest-rules.js';
import { IdleSum, scanSegment } from './binary.js';
import { Bundle, type BundleInput } from './bundle.js';
import { bytesToHex, compareDigestHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes, SEG } from './chain.js';
import { isRunRecordError, RunRecordError, type SpecErrorCode } from './errors.js';
import type { RecordIdentity } from './host.js';
import { EXECUTED, RESUMED, RuleTracker } from './rules.js';
import { parseTrustKey } from './signature.js';
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
      /** Active (bundled), idle and total energy, and how many executed segments could not be costed. */
      readonly cost: RecordCost;
      /** Keys whose signatures verified, distinct, in first-seen order. */
      readonly signedBy: readonly Hex[];
    }
  | { readonly ok: false; readonly error: SpecErrorCode; readonly index?: number; readonly message: string };

export interface VerifyOptions {
  /** A head the caller expects (e.g. one it stored earlier). */
  readonly expectHead?: Hex | undefined;
  /**
   * Rule 9: every executed segment's attestation must be bundled and signed by one of these keys (64 hex,
   * either case; `InvalidKey` is thrown otherwise). An empty list trusts nobody; omit it to check none.
   */
  readonly trustKeys?: readonly string[] | undefined;
}

/** What a streaming Verifier checks beyond the chain: the bundle and the trusted keys. */
export interface VerifierOptions {
  /** Decoded bodies by address, or the wire form's `attestations` object (MalformedRecord if not an object). */
  readonly attestations?: BundleInput | undefined;
  readonly trustKeys?: readonly string[] | undefined;
}

function trustSet(keys: readonly string[] | undefined): ReadonlySet<Hex> | null {
  return keys === undefined ? null : new Set(keys.map(parseTrustKey));
}

export interface FinishOptions {
  /** The record's own `head` field, if it has one: must equal the last segment's head. */
  readonly head?: Hex | undefined;
  /** A head the caller expects (e.g. one it stored earlier). */
  readonly expectHead?: Hex | undefined;
}

export class Verifier {
  private readonly cursor: ChainCursor;
  private readonly rules = new RuleTracker();
  private count = 0;
  private readonly idle = new IdleSum();
  private readonly accounts = new AccountWalker();
  /** Rules 6–9, cost and signers; null for a record without a bundle verified without trusted keys. */
  private readonly attest: AttestationTracker | null;
  /** Executed segments, when there is no tracker (each is then unresolved). */
  private executed = 0;
  private failure: RunRecordError | null = null;

  /**
   * Throws MalformedRecord if either id is not an address or `attestations` is not an object, InvalidKey if
   * a trusted key is not 64 hex digits.
   */
  constructor(id: RecordIdentity, options: VerifierOptions = {}) {
    this.cursor = new ChainCursor(genesisBytes(id.unitId, id.grantsId));
    const trust = trustSet(options.trustKeys);
    const bundle = options.attestations === undefined ? null : Bundle.from(options.attestations);
    this.attest =
      bundle === null && trust === null
        ? null
        : new AttestationTracker(id.unitId, id.grantsId, bundle, trust);
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
    const kind = buf[SEG];
    const attest = this.attest;
    if (kind === EXECUTED && attest !== null) {
      const problem = attest.check(buf, SEG + 1, this.cursor.headBytes);
      if (problem) return this.fail(problem, index);
    }
    this.rules.accept(buf, SEG);
    this.cursor.moveTo(digest);
    if (kind === RESUMED) this.idle.add(buf, SEG);
    else if (kind === EXECUTED) {
      this.accounts.pushBytes(index, buf, SEG, this.cursor.end);
      if (attest === null) this.executed++;
      else attest.accept();
    }
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
    const e = this.failure ?? this.attest?.orphanProblem() ?? this.finalHeadProblem(options);
    if (e) {
      const error = e.code as SpecErrorCode;
      return e.index === undefined
        ? { ok: false, error, message: e.detail }
        : { ok: false, error, index: e.index, message: e.detail };
    }
    const idleUj = this.idle.total;
    return {
      ok: true,
      head: this.head,
      length: this.count,
      phase: this.phase,
      idleUj,
      account: this.accounts.verdict(),
      cost: this.attest?.cost(idleUj) ?? {
        activeUj: 0n,
        idleUj,
        totalUj: idleUj,
        unresolved: this.executed,
      },
      signedBy: this.attest?.signedBy ?? [],
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
  options: VerifyOptions,
): { v: Verifier; result: VerifyResult } | VerifyResult {
  let v: Verifier;
  try {
    v = new Verifier(record, { attestations: record.attestations, trustKeys: options.trustKeys });
  } catch (e) {
    return malformed(e);
  }
  if (!Array.isArray(record.segments))
    return malformed(new RunRecordError('MalformedRecord', 'no segment list'));
  for (const s of record.segments) if (!v.push(s)) break;
  return { v, result: v.finish({ head: record.head, expectHead: options.expectHead }) };
}

/**
 * Verifies a decoded record from genesis (its bundle, if it has one, included), optionally against an
 * expected head and a set of trusted keys. Throws `InvalidKey` for a trusted key that is not 64 hex digits.
 */
export function verifyRecord(record: RunRecord, options: VerifyOptions = {}): VerifyResult {
  trustSet(options.trustKeys);
  const r = run(record, options);
  return 'v' in r ? r.result : r;
}

/**
 * Verifies a record in its wire form, reading segments one by one (the spec's order of checks), bundle and
 * trusted keys included. Throws `InvalidKey` for a trusted key that is not 64 hex digits.
 */
export function verifyWire(json: unknown, options: VerifyOptions = {}): VerifyResult {
  trustSet(options.trustKeys);
  let env: ReturnType<typeof decodeEnvelope>;
  let v: Verifier;
  try {
    env = decodeEnvelope(json);
    v = new Verifier(env, { attestations: env.attestations, trustKeys: options.trustKeys });
  } catch (e) {
    return malformed(e);
  }
  for (const raw of env.segments) if (!v.pushWire(raw)) break;
  return v.finish({ head: env.head, expectHead: options.expectHead });
}

/** @internal verify and return the state to continue from; throws the failure as a RunRecordError. */
export function verifyRecordState(record: RunRecord, options: VerifyOptions) {
  const r = run(record, options);
  const result = 'v' in r ? r.result : r;
  if (!result.ok) throw new RunRecordError(result.error, result.message, result.index);
  return (r as { v: Verifier }).v.continuation();
}
