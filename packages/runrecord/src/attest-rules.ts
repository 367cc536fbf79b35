// Rules 6–9 of `sandbox.runrecord/1` (the attestation bundle), checked for an executed segment right after
// its PhaseViolation check and before the next segment:
//   6. the body encodes (MalformedRecord) and H(att) is the segment's address (AttestationMismatch);
//   7. its unit_id / grants_id are the record's and record_head is the head before this segment
//      (AttestationMismatch);
//   8. a signature, when present, verifies — strict RFC 8032 (BadSignature);
//   9. with trusted keys, the segment's attestation is bundled and signed by one of them
//      (UntrustedAttestation) — an unbundled segment included.
// The host applies 6–8 on append (host.ts); the verifier also keeps the cost and the signers (AttestationTracker).
import type { AttestationBody } from './attestation.js';
import type { Bundle } from './bundle.js';
import { bodyBytes } from './bundle.js';
import { bytesToHex, compareDigestHex, type Hex } from './bytes.js';
import { RunRecordError } from './errors.js';
import { blake3 } from './hash.js';
import { verifyAddressSignature } from './signature.js';

/** The record and position a body must be bound to. */
export interface BindingSite {
  readonly unitId: Hex;
  readonly grantsId: Hex;
  /** The head before the segment (32 bytes). */
  readonly headBefore: Uint8Array;
}

const mismatch = (why: string) => new RunRecordError('AttestationMismatch', why);

function sameBytes(a: Uint8Array, b: Uint8Array, at: number): boolean {
  let diff = 0;
  for (let i = 0; i < 32; i++) diff |= a[i]! ^ b[at + i]!;
  return diff === 0;
}

/**
 * Rules 6 (address) and 7 (binding) for a body whose bytes `att` are known to encode; the address is the 32
 * bytes at `buf[at..]`.
 */
export function bindingProblem(
  att: Uint8Array,
  body: AttestationBody,
  buf: Uint8Array,
  at: number,
  site: BindingSite,
): RunRecordError | null {
  if (!sameBytes(blake3(att), buf, at)) return mismatch('the body does not hash to the segment’s address');
  if (body.unitId !== site.unitId) return mismatch('the attestation is of another unit');
  if (body.grantsId !== site.grantsId) return mismatch('the attestation is under another grant set');
  if (compareDigestHex(site.headBefore, body.recordHead) !== 1)
    return mismatch('the attestation is bound to another position (record_head)');
  return null;
}

/** Rule 8: a signature, when present, verifies over the address at `buf[at..]`. */
export function signatureProblem(body: AttestationBody, buf: Uint8Array, at: number): RunRecordError | null {
  if (body.signature === undefined) return null;
  return verifyAddressSignature(buf.subarray(at, at + 32), body.signature)
    ? null
    : new RunRecordError('BadSignature', 'the signature does not verify');
}

/** A run's cost from its record: exact sums (they may exceed u64). */
export interface RecordCost {
  /** Σ active_uj of the bundled attestations the executed segments name. */
  readonly activeUj: bigint;
  /** Σ idle_uj over resumed segments. */
  readonly idleUj: bigint;
  readonly totalUj: bigint;
  /** Executed segments whose attestation is not bundled (segments, not distinct addresses). */
  readonly unresolved: number;
}

/**
 * The verifier's side of rules 6–9 for one record: checks each executed segment against the bundle and the
 * trusted keys, and keeps what a successful verify reports (cost, signers) and what is checked after the
 * last segment (a bundle entry no segment names).
 */
export class AttestationTracker {
  private readonly named = new Set<string>();
  private readonly signers: Hex[] = [];
  private readonly signerSet = new Set<Hex>();
  private active = 0n;
  private unresolvedCount = 0;
  private pending: { address: Hex; body: AttestationBody | undefined } | null = null;

  constructor(
    private readonly unitId: Hex,
    private readonly grantsId: Hex,
    private readonly bundle: Bundle | null,
    private readonly trust: ReadonlySet<Hex> | null,
  ) {}

  /**
   * Rules 6–9 for the executed segment whose address is at `buf[at..]`, `headBefore` the head before it.
   * Changes nothing until `accept`.
   */
  check(buf: Uint8Array, at: number, headBefore: Uint8Array): RunRecordError | null {
    const address = bytesToHex(buf.subarray(at, at + 32));
    let body: AttestationBody | undefined;
    if (this.bundle !== null && this.bundle.size > 0) {
      try {
        body = this.bundle.body(address);
        if (body !== undefined) {
          const site = { unitId: this.unitId, grantsId: this.grantsId, headBefore };
          const problem =
            bindingProblem(bodyBytes(body), body, buf, at, site) ?? signatureProblem(body, buf, at);
          if (problem) return problem;
        }
      } catch (e) {
        if (e instanceof RunRecordError) return e;
        throw e;
      }
    }
    if (this.trust !== null) {
      if (body === undefined)
        return new RunRecordError('UntrustedAttestation', 'the attestation is not in the bundle');
      if (body.signature === undefined)
        return new RunRecordError('UntrustedAttestation', 'the attestation is not signed');
      if (!this.trust.has(body.signature.key))
        return new RunRecordError('UntrustedAttestation', 'the attestation is signed by an untrusted key');
    }
    this.pending = { address, body };
    return null;
  }

  /** The segment last checked was accepted. */
  accept(): void {
    const p = this.pending;
    this.pending = null;
    if (p === null || p.body === undefined) {
      this.unresolvedCount++;
      return;
    }
    this.named.add(p.address);
    this.active += p.body.activeUj;
    const key = p.body.signature?.key;
    if (key !== undefined && !this.signerSet.has(key)) {
      this.signerSet.add(key);
      this.signers.push(key);
    }
  }

  /** After the last segment: a bundle entry no executed segment names is MalformedRecord (no index). */
  orphanProblem(): RunRecordError | null {
    if (this.bundle === null || this.named.size === this.bundle.size) return null;
    for (const k of this.bundle.keys()) {
      if (!this.named.has(k))
        return new RunRecordError(
          'MalformedRecord',
          `bundle entry ${k.slice(0, 16)}… is named by no segment`,
        );
    }
    return null;
  }

  cost(idleUj: bigint): RecordCost {
    return { activeUj: this.active, idleUj, totalUj: this.active + idleUj, unresolved: this.unresolvedCount };
  }

  get signedBy(): readonly Hex[] {
    return this.signers.slice();
  }
}
