import { createHash } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KEY_1, L, le32, SMALL_ORDER_KEYS } from '../test/attest-helpers.js';
import { bytesToHex, hexToBytes } from './bytes.js';
import { nativeConfirms, nativeVerifyAvailable } from './native-verify.js';
import { generateSigningKey, signAddress, signatureMessage, verifyAddressSignature } from './signature.js';

const STRICT = { zip215: false } as const;
const strict = (sig: string, address: string, key: string) => {
  try {
    return ed25519.verify(hexToBytes(sig), signatureMessage(address), hexToBytes(key), STRICT);
  } catch {
    return false;
  }
};
const leToBig = (b: Uint8Array) => BigInt(`0x${bytesToHex(Uint8Array.from(b).reverse()) || '0'}`);

/**
 * A signature the strict (cofactored) verifier accepts but a cofactorless one (OpenSSL) refuses: R shifted
 * by a point of order 8, S made for the shifted R — so [S]B = R' + [k']A − T with 8T = 0.
 */
function torsionSignature(seed: Uint8Array, address: string): string {
  const { scalar, pointBytes } = ed25519.utils.getExtendedPublicKey(seed);
  const msg = signatureMessage(address);
  const r = 12345678901234567890n % L;
  const T = ed25519.Point.fromHex(SMALL_ORDER_KEYS[4]!, false);
  const R = ed25519.Point.BASE.multiply(r).add(T).toBytes();
  const h = createHash('sha512').update(R).update(pointBytes).update(msg).digest();
  const k = leToBig(h) % L;
  const S = (r + k * scalar) % L;
  return bytesToHex(R) + le32(S);
}

describe('native confirmation of Ed25519 signatures', () => {
  it('is available on this runtime (Node ≥ 20.16)', () => {
    expect(nativeVerifyAvailable()).toBe(true);
  });

  it('agrees with the strict verifier on signatures made, and altered by one bit', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.nat({ max: 511 }),
        fc.boolean(),
        (seed, addrBytes, bit, flip) => {
          const key = generateSigningKey(seed);
          const address = bytesToHex(addrBytes);
          const s = signAddress(address, key.secretKey);
          const sigBytes = hexToBytes(s.sig);
          if (flip) sigBytes[bit >> 3]! ^= 1 << (bit & 7);
          const sig = bytesToHex(sigBytes);
          const expected = strict(sig, address, key.publicKey);
          // A native yes is always a strict yes; the public function is exactly the strict verifier.
          if (nativeConfirms(sigBytes, signatureMessage(address), key.publicKey)) expect(expected).toBe(true);
          expect(verifyAddressSignature(address, { alg: 'ed25519', key: key.publicKey, sig })).toBe(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('never confirms for a small-order key; a torsioned R is refused natively yet accepted (the curve decides)', () => {
    for (const key of SMALL_ORDER_KEYS)
      expect(nativeConfirms(hexToBytes(le32(1n) + le32(0n)), signatureMessage('00'.repeat(32)), key)).toBe(
        false,
      );
    const seed = new Uint8Array(32).fill(9);
    const pk = generateSigningKey(seed).publicKey;
    const address = 'ab'.repeat(32);
    const sig = torsionSignature(seed, address);
    expect(strict(sig, address, pk)).toBe(true);
    expect(nativeConfirms(hexToBytes(sig), signatureMessage(address), pk)).toBe(false);
    expect(verifyAddressSignature(address, { alg: 'ed25519', key: pk, sig })).toBe(true);
  });

  it('confirms the signature of a real key and not the same signature under another key', () => {
    const address = 'cd'.repeat(32);
    const s = signAddress(address, KEY_1.secretKey);
    const msg = signatureMessage(address);
    expect(nativeConfirms(hexToBytes(s.sig), msg, KEY_1.publicKey)).toBe(true);
    const other = generateSigningKey(new Uint8Array(32).fill(77)).publicKey;
    expect(nativeConfirms(hexToBytes(s.sig), msg, other)).toBe(false);
  });
});
