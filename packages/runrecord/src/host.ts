// The host side: an appendable record. Every refusal is a RunRecordError with the spec's code and the index
// the segment would have had; a refused append leaves the record and its head exactly as they were.
// Order of checks on append (the verifier's, without the head check): RecordClosed → MalformedSnapshot /
// MalformedRecord (the segment cannot be encoded) → PhaseViolation → SnapshotMismatch → ManifestMismatch →
// ZeroIdleEnergy; for an executed segment with a body, rules 6–8 right after its PhaseViolation check:
// MalformedRecord (the body cannot be encoded) → AttestationMismatch (address, unit, grants, record_head)
// → BadSignature.

import { bindingProblem, signatureProblem } from './attest-rules.js';
import { type Attestation, type AttestationBody, attestationAddress } from './attestation.js';
import { scanSegment } from './binary.js';
import { bodyBytes, normalizeBody } from './bundle.js';
import { bytesToHex, type Hex } from './bytes.js';
import { ChainCursor, genesisBytes, SEG } from './chain.js';
import { isRunRecordError, type RunRecordError } from './errors.js';
import { EXECUTED, RuleTracker } from './rules.js';
import { normalizeSegment } from './segment.js';
import { signAttestation } from './signature.js';
import type {
  Account,
  CloseReason,
  IdleProvenance,
  Phase,
  Segment,
  SegmentBody,
  SnapshotInput,
  SnapshotRef,
} from './types.js';

export interface ExecuteInput {
  readonly attestation: Hex;
  /** Omit for "not accounted"; `{dispatched: [], resolved: []}` is "accounted, no calls". */
  readonly account?: Account | undefined;
  /**
   * The attestation itself, to travel with the record in its bundle. It must hash to `attestation`, be of
   * this record's unit and grant set, name the record's current head as `recordHead`, and carry a signature
   * that verifies, if any (AttestationMismatch / BadSignature otherwise).
   */
  readonly body?: AttestationBody | undefined;
}

function executedBody(attestation: Hex, account: Account | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { kind: 'executed', attestation };
  if (account !== undefined) body.account = account;
  return body;
}

/** An executed interval's receipt: an attestation without what the record supplies (unit, grants, head). */
export type IntervalReceipt = Omit<Attestation, 'unitId' | 'grantsId' | 'recordHead'>;

export interface ExecuteIntervalOptions {
  readonly account?: Account | undefined;
  /** The steward's 32-byte Ed25519 secret key; omit for an unsigned body. */
  readonly secretKey?: Uint8Array | undefined;
}

/** What `executeInterval` appended: the segment, the body (bundle it, store it) and its address. */
export interface AttestedInterval {
  readonly segment: Segment;
  readonly body: AttestationBody;
  readonly address: Hex;
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
    return this.append(executedBody(input.attestation, input.account), input.body);
  }

  /**
   * Seals an executed interval of this record and appends it: builds the attestation bound here (this
   * record's unit and grant set, its current head as `recordHead`), signs it when given a secret key, and
   * appends the executed segment with the body. Throws `InvalidAttestation` / `InvalidKey` for a receipt or
   * key that cannot be used, and the append's refusals (RecordClosed, PhaseViolation, …). The signature it
   * has just made is not verified again (that would double the cost of a signed append); every reader
   * verifies it.
   */
  executeInterval(receipt: IntervalReceipt, options: ExecuteIntervalOptions = {}): AttestedInterval {
    const attestation: Attestation = {
      ...receipt,
      unitId: this.unitId,
      grantsId: this.grantsId,
      recordHead: this.head,
    };
    const { body, address } =
      options.secretKey === undefined
        ? { body: attestation, address: attestationAddress(attestation) }
        : signAttestation(attestation, options.secretKey);
    const segment = this.append(executedBody(address, options.account), body, true);
    return { segment, body: normalizeBody(body), address };
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
  private prepare(body: unknown, attestation?: AttestationBody, signedHere = false): void {
    const index = this.count;
    const closed = this.rules.closedError();
    if (closed) throw closed.at(index);
    try {
      this.cursor.encode(body);
    } catch (e) {
      throw isRunRecordError(e) ? e.at(index) : e;
    }
    const buf = this.cursor.buf;
    const refused = this.rules.check(buf, SEG);
    if (refused) throw refused.at(index);
    if (buf[SEG] === EXECUTED) {
      // Rule 6 ("the body encodes") comes after the segment's PhaseViolation check, as on verify.
      let att: Uint8Array | undefined;
      try {
        if (attestation !== undefined) att = bodyBytes(attestation);
      } catch (e) {
        throw isRunRecordError(e) ? e.at(index) : e;
      }
      const problem = this.attestationProblem(buf, SEG + 1, attestation, att, signedHere);
      if (problem) throw problem.at(index);
    }
  }

  /** Rules 6–8 for an executed segment whose address is at `buf[at..]` (the body, if any, encodes as `att`). */
  private attestationProblem(
    buf: Uint8Array,
    at: number,
    body: AttestationBody | undefined,
    att: Uint8Array | undefined,
    signedHere: boolean,
  ): RunRecordError | null {
    if (body === undefined || att === undefined) return this.unboundReuse(buf, at);
    const site = { unitId: this.unitId, grantsId: this.grantsId, headBefore: this.cursor.headBytes };
    return bindingProblem(att, body, buf, at, site) ?? (signedHere ? null : signatureProblem(body, buf, at));
  }

  /**
   * A segment without a body naming an address whose bundled body is bound elsewhere (a record that holds
   * its bundle knows; the O(1) writer keeps none).
   */
  protected unboundReuse(_buf: Uint8Array, _at: number): RunRecordError | null {
    return null;
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
  protected append(body: unknown, attestation?: AttestationBody, signedHere = false): Segment {
    this.prepare(body, attestation, signedHere);
    const head = bytesToHex(this.advance());
    this.headHex = head;
    const segment = normalizeSegment(body as SegmentBody, head);
    this.appended(segment, attestation === undefined ? undefined : normalizeBody(attestation));
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
    const buf = this.cursor.buf;
    const refused =
      this.rules.check(buf, SEG) ?? (buf[SEG] === EXECUTED ? this.unboundReuse(buf, SEG + 1) : null);
    if (refused) throw refused.at(index);
    const digest = this.advance();
    this.headHex = null;
    this.appendedBytes(seg, digest);
    return digest;
  }

  protected appendedBytes(_seg: Uint8Array, _head: Uint8Array): void {}
  protected appended(_segment: Segment, _attestation: AttestationBody | undefined): void {}
}

/** A new record that keeps no segments in memory (constant memory in length). */
export function openWriter(id: RecordIdentity): RecordWriter {
  return new RecordWriter(id);
}
