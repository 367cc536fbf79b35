// Attestation objects: what an executed segment points at. Canonical bytes, content address, a store.
import { ByteWriter, bytesToHex, type Hex, isAddr, isU64, isWellFormedString } from './bytes.js';
import { RunRecordError } from './errors.js';
import { blake3 } from './hash.js';
import { IDLE_PROVENANCE_BYTE, type IdleProvenance } from './types.js';

export const ATTESTATION_TAG = 'sandbox.attestation/1';
const TAG_BYTES = new TextEncoder().encode(ATTESTATION_TAG); // 21 ASCII bytes

export type Outcome = 'succeeded' | 'failed' | 'yielded' | 'cancelled';
const OUTCOME_BYTE: Record<Outcome, number> = {
  succeeded: 0x01,
  failed: 0x02,
  yielded: 0x03,
  cancelled: 0x04,
};

/** One sealed active interval: its energy receipt, replay-journal root and outcome. */
export interface Attestation {
  readonly unitId: Hex;
  readonly grantsId: Hex;
  /** The run record's head when the interval began. */
  readonly recordHead: Hex;
  /** Unix epoch milliseconds (u64). */
  readonly startedMs: bigint;
  readonly endedMs: bigint;
  /** The interval's energy receipt, in microjoules (u64). */
  readonly activeUj: bigint;
  readonly provenance: IdleProvenance;
  /** What produced the figure, e.g. `rapl`, `cgroup-cpu-model`. */
  readonly meter: string;
  readonly journalRoot: Hex;
  readonly outcome: Outcome;
  /** i32 */
  readonly exitCode: number;
  /** The previous attestation in the steward's audit chain, if any. */
  readonly auditPrev?: Hex | undefined;
}

/** An Ed25519 signature over `"sandbox.attestation.sig/1" ‖ address(att)`; not part of the bytes `att`. */
export interface AttestationSignature {
  readonly alg: 'ed25519';
  /** The signer's 32-byte public key, 64 lowercase hex. */
  readonly key: Hex;
  /** The 64-byte signature, 128 lowercase hex. */
  readonly sig: Hex;
}

/** An attestation as a record's bundle carries it: the attested fields and, optionally, a signature. */
export interface AttestationBody extends Attestation {
  readonly signature?: AttestationSignature | undefined;
}

const invalid = (why: string) => new RunRecordError('InvalidAttestation', why);

/** The canonical bytes `att`. Throws `InvalidAttestation` if a field cannot be encoded. */
export function attestationBytes(a: Attestation): Uint8Array {
  const w = new ByteWriter(256);
  w.bytes(TAG_BYTES);
  for (const k of ['unitId', 'grantsId', 'recordHead'] as const) {
    if (!w.addr(a[k])) throw invalid(`${k} is not an address`);
  }
  for (const k of ['startedMs', 'endedMs', 'activeUj'] as const) {
    if (!isU64(a[k])) throw invalid(`${k} is not a u64 bigint`);
    w.u64(a[k]);
  }
  if (!Object.hasOwn(IDLE_PROVENANCE_BYTE, a.provenance))
    throw invalid('provenance is not measured|estimated');
  w.u8(IDLE_PROVENANCE_BYTE[a.provenance]);
  if (!isWellFormedString(a.meter)) throw invalid('meter is not a well-formed string');
  w.str(a.meter);
  if (!w.addr(a.journalRoot)) throw invalid('journalRoot is not an address');
  if (!Object.hasOwn(OUTCOME_BYTE, a.outcome))
    throw invalid('outcome is not succeeded|failed|yielded|cancelled');
  w.u8(OUTCOME_BYTE[a.outcome]);
  if (!Number.isInteger(a.exitCode) || a.exitCode < -(2 ** 31) || a.exitCode >= 2 ** 31) {
    throw invalid('exitCode is not an i32');
  }
  w.i32(a.exitCode);
  if (a.auditPrev === undefined) {
    w.u8(0x00);
  } else {
    w.u8(0x01);
    if (!w.addr(a.auditPrev)) throw invalid('auditPrev is not an address');
  }
  return w.take();
}

/** address(att) = H(att), as hex. */
export function attestationAddress(a: Attestation): Hex {
  return bytesToHex(blake3(attestationBytes(a)));
}

/** Validates an attestation and returns a frozen copy with its address. */
export function buildAttestation(fields: Attestation): { attestation: Attestation; address: Hex } {
  const attestation: Attestation = Object.freeze({
    unitId: fields.unitId,
    grantsId: fields.grantsId,
    recordHead: fields.recordHead,
    startedMs: fields.startedMs,
    endedMs: fields.endedMs,
    activeUj: fields.activeUj,
    provenance: fields.provenance,
    meter: fields.meter,
    journalRoot: fields.journalRoot,
    outcome: fields.outcome,
    exitCode: fields.exitCode,
    ...(fields.auditPrev === undefined ? {} : { auditPrev: fields.auditPrev }),
  });
  return { attestation, address: attestationAddress(attestation) };
}

/** Where a cost report resolves attestations. May be synchronous or not (a database, an object store). */
export interface AttestationStore {
  get(address: Hex): Attestation | undefined | Promise<Attestation | undefined>;
}

/** An in-memory store, keyed by content address. */
export class MemoryAttestationStore implements AttestationStore {
  private readonly byAddress = new Map<Hex, Attestation>();

  /** Stores an attestation under its address and returns the address. */
  put(a: Attestation): Hex {
    const { attestation, address } = buildAttestation(a);
    this.byAddress.set(address, attestation);
    return address;
  }

  get(address: Hex): Attestation | undefined {
    return this.byAddress.get(address);
  }

  has(address: Hex): boolean {
    return isAddr(address) && this.byAddress.has(address);
  }

  get size(): number {
    return this.byAddress.size;
  }
}
