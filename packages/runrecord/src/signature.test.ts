import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { fromLe, IDENTITY_SIG, KEY_1, KEY_2, L, le32, P, SMALL_ORDER_KEYS } from '../test/attest-helpers.js';
import { addr } from '../test/helpers.js';
import { bytesToHex, hexToBytes } from './bytes.js';
import {
  generateSigningKey,
  parseTrustKey,
  publicKeyOf,
  signAddress,
  signatureMessage,
  verifyAddressSignature,
} from './signature.js';

describe('keys', () => {
  it('derives the RFC 8032 §7.1 TEST 1 public key from its secret key', () => {
    const secret = hexToBytes('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
    expect(publicKeyOf(secret)).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    expect(generateSigningKey(secret).publicKey).toBe(publicKeyOf(secret));
  });

  it('is a pure function of the 32 random bytes, and copies them', () => {
    const seed = new Uint8Array(32).fill(7);
    const k = generateSigningKey(seed);
    seed[0] = 0;
    expect(k.secretKey[0]).toBe(7);
    expect(generateSigningKey(new Uint8Array(32).fill(7)).publicKey).toBe(k.publicKey);
  });

  it('refuses a secret that is not 32 bytes and a trusted key that is not 64 hex digits (InvalidKey)', () => {
    expect(() => generateSigningKey(new Uint8Array(31))).toThrow(
      expect.objectContaining({ code: 'InvalidKey' }),
    );
    expect(() => publicKeyOf(new Uint8Array(64))).toThrow(expect.objectContaining({ code: 'InvalidKey' }));
    expect(parseTrustKey(KEY_1.publicKey.toUpperCase())).toBe(KEY_1.publicKey);
    expect(() => parseTrustKey('abc')).toThrow(expect.objectContaining({ code: 'InvalidKey' }));
  });
});

describe('signatures over "sandbox.attestation.sig/1" ‖ address', () => {
  const address = addr(0xa7);

  it('signs the 25-byte ASCII tag followed by the 32 address bytes', () => {
    const tag = '73616e64626f782e6174746573746174696f6e2e7369672f31'; // "sandbox.attestation.sig/1"
    expect(bytesToHex(signatureMessage(address))).toBe(tag + address);
    const s = signAddress(address, KEY_1.secretKey);
    expect(s).toEqual({
      alg: 'ed25519',
      key: KEY_1.publicKey,
      sig: expect.stringMatching(/^[0-9a-f]{128}$/),
    });
    expect(ed25519.verify(hexToBytes(s.sig), signatureMessage(address), hexToBytes(s.key))).toBe(true);
  });

  it('verifies its own signature and nothing else: another address, key or bit', () => {
    const s = signAddress(address, KEY_1.secretKey);
    // Verified once, the triple is remembered: what follows checks the memo admits nothing else.
    expect(verifyAddressSignature(address, s)).toBe(true);
    expect(verifyAddressSignature(hexToBytes(address), s)).toBe(true);
    expect(verifyAddressSignature(addr(0xa8), s)).toBe(false);
    expect(verifyAddressSignature(address, { ...s, key: KEY_2.publicKey })).toBe(false);
    for (const at of [0, 40, 64, 127]) {
      const flipped = s.sig.slice(0, at) + (s.sig[at] === '0' ? '1' : '0') + s.sig.slice(at + 1);
      expect(verifyAddressSignature(address, { ...s, sig: flipped })).toBe(false);
    }
    expect(verifyAddressSignature(address, s)).toBe(true);
  });

  it('never verifies with a small-order key, though ZIP-215 (noble’s default) accepts every one', () => {
    const msg = signatureMessage(address);
    for (const key of SMALL_ORDER_KEYS) {
      expect(ed25519.Point.fromHex(key).isSmallOrder()).toBe(true);
      expect(ed25519.verify(hexToBytes(IDENTITY_SIG), msg, hexToBytes(key))).toBe(true); // the trap
      expect(verifyAddressSignature(address, { alg: 'ed25519', key, sig: IDENTITY_SIG })).toBe(false);
    }
    expect(new Set(SMALL_ORDER_KEYS.map((k) => ed25519.Point.fromHex(k).toHex())).size).toBe(8);
  });

  it('refuses non-canonical encodings: S + L, a key with y ≥ p', () => {
    const s = signAddress(address, KEY_1.secretKey);
    const big = le32(fromLe(s.sig.slice(64)) + L);
    expect(verifyAddressSignature(address, { ...s, sig: s.sig.slice(0, 64) + big })).toBe(false);
    const identityPlusP = le32(P + 1n); // y = 1 encoded as p + 1
    const msg = signatureMessage(address);
    expect(ed25519.verify(hexToBytes(IDENTITY_SIG), msg, hexToBytes(identityPlusP))).toBe(true);
    expect(verifyAddressSignature(address, { alg: 'ed25519', key: identityPlusP, sig: IDENTITY_SIG })).toBe(
      false,
    );
  });

  it('answers false, without throwing, for a signature of the wrong shape', () => {
    const s = signAddress(address, KEY_1.secretKey);
    for (const bad of [
      { ...s, sig: s.sig.slice(2) },
      { ...s, key: 'zz'.repeat(32) },
      { ...s, alg: 'EdDSA' },
      { ...s, sig: s.sig.toUpperCase() },
    ])
      expect(verifyAddressSignature(address, bad as typeof s)).toBe(false);
  });
});
