// Keys, receipts and bundled records for the attestation tests.
import { type Attestation, type AttestationBody, attestationAddress } from '../src/attestation.js';
import { encodeAttestationBody } from '../src/bundle.js';
import { bytesToHex, hexToBytes } from '../src/bytes.js';
import { genesisHead, nextHead } from '../src/chain.js';
import type { IntervalReceipt } from '../src/host.js';
import { openRecord } from '../src/host-record.js';
import { generateSigningKey, signAttestation } from '../src/signature.js';
import type { Hex } from '../src/types.js';
import { encodeSegment } from '../src/wire.js';
import { addr, GRANTS, UNIT } from './helpers.js';

/** A deterministic key pair (seed = 32 × n). */
export const keyOf = (n: number) => generateSigningKey(new Uint8Array(32).fill(n));
export const KEY_1 = keyOf(1);
export const KEY_2 = keyOf(2);
export const KEY_3 = keyOf(3);

export const receipt = (n: number, over: Partial<IntervalReceipt> = {}): IntervalReceipt => ({
  startedMs: 1_764_600_000_000n + BigInt(n),
  endedMs: 1_764_600_004_200n + BigInt(n),
  activeUj: 8_400_000n + BigInt(n),
  provenance: 'estimated',
  meter: 'cgroup-cpu-model',
  journalRoot: addr(0x40 + n),
  outcome: 'succeeded',
  exitCode: 0,
  ...over,
});

/** A full attestation bound to (UNIT, GRANTS) at `recordHead`. */
export const attestationAt = (recordHead: Hex, n = 1, over: Partial<Attestation> = {}): Attestation => ({
  ...receipt(n),
  unitId: UNIT,
  grantsId: GRANTS,
  recordHead,
  ...over,
});

/**
 * execute(signed by KEY_1) → suspend → resume(idle 700) → execute(unsigned) → execute(not bundled) → close.
 * Returns the host and the bodies in order.
 */
export function bundledRecord() {
  const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
  const first = r.executeInterval(receipt(1), {
    secretKey: KEY_1.secretKey,
    account: { dispatched: ['c1'], resolved: [] },
  });
  r.suspend({ snapshot: { transcript: addr(0x33) }, manifest: addr(0x44) });
  r.resume({
    snapshot: { transcript: addr(0x33) },
    manifest: addr(0x44),
    idleUj: 700n,
    idleProvenance: 'measured',
  });
  const second = r.executeInterval(receipt(2), { account: { dispatched: [], resolved: ['c1'] } });
  r.execute({ attestation: addr(0x77) });
  r.close('completed');
  return { record: r, bodies: [first, second] as const };
}

/** The JSON wire form of a host record, as a reader gets it. */
export const wireOf = (r: { toWire(): unknown }) => JSON.parse(JSON.stringify(r.toWire()));

export type { AttestationBody };

export const L = 2n ** 252n + 27742317777372353535851937790883648493n;
export const P = 2n ** 255n - 19n;
export const le32 = (n: bigint) => {
  const b = new Uint8Array(32);
  for (let i = 0; i < 32; i++) b[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return bytesToHex(b);
};
export const fromLe = (hex: string) => {
  const b = hexToBytes(hex);
  let n = 0n;
  for (let i = 31; i >= 0; i--) n = (n << 8n) | BigInt(b[i]!);
  return n;
};
/** The eight points of order dividing 8, canonically encoded (RFC 8032 decoding accepts each). */
export const SMALL_ORDER_KEYS = [
  le32(1n), // identity
  le32(P - 1n), // (0, -1), order 2
  le32(0n), // (√-1, 0), order 4
  le32(0n | (1n << 255n)), // (-√-1, 0), order 4
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
];
/** R = identity, S = 0: verifies under ZIP-215 with any small-order key, for every message. */
export const IDENTITY_SIG = le32(1n) + le32(0n);

/** One item of a forged record: a segment, or a body made from the head before it (then executed). */
export type ForgeItem =
  | import('../src/types.js').SegmentBody
  | ((headBefore: Hex) => {
      body: AttestationBody;
      address?: Hex;
      account?: import('../src/types.js').Account;
    });

/**
 * Chains segments with correct heads WITHOUT applying any rule, collecting bodies into a wire bundle: a
 * record whose only defects are the ones a test puts there.
 */
export function forgeWire(items: ForgeItem[], unitId: Hex = UNIT, grantsId: Hex = GRANTS) {
  let head = genesisHead(unitId, grantsId);
  const segments: unknown[] = [];
  const attestations: Record<string, unknown> = {};
  for (const item of items) {
    let body: import('../src/types.js').SegmentBody;
    if (typeof item === 'function') {
      const made = item(head);
      const address = made.address ?? attestationAddress(made.body);
      attestations[address] = encodeAttestationBody(made.body);
      body =
        made.account === undefined
          ? { kind: 'executed', attestation: address }
          : { kind: 'executed', attestation: address, account: made.account };
    } else body = item;
    head = nextHead(head, body);
    segments.push(encodeSegment({ ...body, head } as import('../src/types.js').Segment));
  }
  return {
    format: 'sandbox.runrecord/1',
    unit_id: unitId,
    grants_id: grantsId,
    segments,
    head,
    attestations,
  };
}

/** A body bound at `headBefore`, signed by `key` unless `key` is null. */
export function signedAt(
  headBefore: Hex,
  n = 1,
  key: { secretKey: Uint8Array } | null = KEY_1,
  over: Partial<Attestation> = {},
): AttestationBody {
  const a = attestationAt(headBefore, n, over);
  return key === null ? a : signAttestation(a, key.secretKey).body;
}
