// The reference's attestation bytes and its strict Ed25519 (node:crypto + the RFC 8032 checks it adds),
// against hand-written bytes, RFC 8032's own test vector, and @noble/curves as an outside witness.
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { attAddress, attBytes, Body, signedMessage } from './attestation.js';
import { ascii, fromHex, H, toHex } from './bytes.js';
import {
  L,
  le32Hex,
  littleEndian,
  P,
  publicKeyOf,
  SMALL_ORDER_KEYS,
  signWith,
  strictVerify,
} from './ed25519.js';

const A = 'aa'.repeat(32);
const B = 'bb'.repeat(32);
const C = 'cc'.repeat(32);
const J = 'dd'.repeat(32);
const body = Body.parse({
  unit_id: A,
  grants_id: B,
  record_head: C,
  started_ms: '1',
  ended_ms: '258',
  active_uj: '18446744073709551615',
  provenance: 'measured',
  meter: 'é',
  journal_root: J,
  outcome: 'cancelled',
  exit_code: -2,
});

describe('attestation bytes', () => {
  it('are tag ‖ ids ‖ u64s ‖ provenance ‖ str meter ‖ journal ‖ outcome ‖ i32 exit ‖ audit flag', () => {
    const tag = toHex(ascii('sandbox.attestation/1'));
    expect(tag.length).toBe(42);
    const fixed = `${tag}${A}${B}${C}0000000000000001 0000000000000102 ffffffffffffffff 01 00000002 c3a9 ${J} 04 fffffffe`;
    expect(toHex(attBytes(body))).toBe(`${fixed}00`.replaceAll(' ', ''));
    expect(toHex(attBytes({ ...body, audit_prev: A }))).toBe(`${fixed}01${A}`.replaceAll(' ', ''));
    expect(attAddress(body)).toBe(toHex(H(attBytes(body))));
  });

  it('reads bodies strictly', () => {
    expect(Body.safeParse({ ...body, audit_prev: null }).success).toBe(false);
    expect(Body.safeParse({ ...body, extra: 1 }).success).toBe(false);
    expect(Body.safeParse({ ...body, started_ms: '01' }).success).toBe(false);
    expect(Body.safeParse({ ...body, started_ms: '18446744073709551616' }).success).toBe(false);
    expect(Body.safeParse({ ...body, exit_code: 2 ** 31 }).success).toBe(false);
    expect(Body.safeParse({ ...body, meter: '\uD800' }).success).toBe(false);
    expect(Body.safeParse({ ...body, signature: { alg: 'ed25519', key: A, sig: A + A, x: 1 } }).success).toBe(
      false,
    );
  });
});

describe('strict Ed25519', () => {
  const seed = fromHex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
  const rfcKey = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
  const rfcSig =
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';

  it('reproduces RFC 8032 §7.1 TEST 1 (empty message)', () => {
    expect(publicKeyOf(seed)).toBe(rfcKey);
    expect(signWith(seed, new Uint8Array())).toBe(rfcSig);
    expect(strictVerify(rfcSig, new Uint8Array(), rfcKey)).toBe(true);
  });

  it('signs what noble verifies, over "sandbox.attestation.sig/1" ‖ address', () => {
    const msg = signedMessage(attAddress(body));
    expect(toHex(msg)).toBe(toHex(ascii('sandbox.attestation.sig/1')) + attAddress(body));
    const sig = signWith(seed, msg);
    expect(ed25519.verify(fromHex(sig), msg, fromHex(rfcKey), { zip215: false })).toBe(true);
    expect(strictVerify(sig, msg, rfcKey)).toBe(true);
    expect(strictVerify(sig, signedMessage(A), rfcKey)).toBe(false);
  });

  it('lists exactly the eight small-order points, and never verifies with one', () => {
    const points = SMALL_ORDER_KEYS.map((k) => ed25519.Point.fromHex(k));
    for (const p of points) expect(p.isSmallOrder()).toBe(true);
    expect(new Set(points.map((p) => p.toHex())).size).toBe(8); // the torsion subgroup has order 8
    const idSig = le32Hex(1n) + le32Hex(0n);
    for (const k of SMALL_ORDER_KEYS) {
      expect(ed25519.verify(fromHex(idSig), ascii('m'), fromHex(k))).toBe(true); // ZIP-215 accepts
      expect(strictVerify(idSig, ascii('m'), k)).toBe(false);
    }
  });

  it('refuses S ≥ L and non-canonical encodings of the key and of R', () => {
    const msg = ascii('m');
    const sig = signWith(seed, msg);
    const s = littleEndian(fromHex(sig.slice(64)));
    expect(strictVerify(sig.slice(0, 64) + le32Hex(s + L), msg, rfcKey)).toBe(false);
    const idSig = le32Hex(1n) + le32Hex(0n);
    expect(strictVerify(idSig, msg, le32Hex(P + 1n))).toBe(false); // identity as y = p + 1
    expect(strictVerify(idSig, msg, le32Hex(1n | (1n << 255n)))).toBe(false); // x = 0 with its sign bit
    expect(strictVerify(le32Hex(P + 1n) + le32Hex(0n), msg, rfcKey)).toBe(false);
    expect(strictVerify('zz', msg, rfcKey)).toBe(false);
  });
});
