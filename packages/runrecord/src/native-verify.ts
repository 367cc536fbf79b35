// A native confirmation of an Ed25519 signature (node:crypto, OpenSSL) where the runtime has one — ≈ 30×
// cheaper than the pure-JS curve — that can only CONFIRM what the strict verifier would accept, never refute:
// `verifyAddressSignature` asks the curve whenever this answers anything but true. Why a native accept
// implies the strict one (RFC 8032 with `zip215: false`, signature.ts):
// - OpenSSL checks 0 ≤ S < L, and compares the canonical encoding of [S]B − [k]A with R's bytes — so R is a
//   canonical encoding of a curve point and the cofactorless equation holds, which implies the cofactored
//   one the strict verifier checks; k is SHA-512(R ‖ A ‖ M) mod L from the same bytes in both.
// - The public key: used natively only once the strict decoder accepted it (canonical y < p, on the curve,
//   not x = 0 with the sign bit) and it is not of small order — checked once per key here, as the strict
//   verifier checks it on every call.
// So a native `true` is the strict verifier's `true`; a native `false` (or an exception) decides nothing.
import { ed25519 } from '@noble/curves/ed25519.js';
import type { Hex } from './bytes.js';
import { hexToBytes } from './bytes.js';

interface KeyObjectLike {
  readonly type: string;
}
interface NodeCrypto {
  createPublicKey(input: { key: Uint8Array; format: 'der'; type: 'spki' }): KeyObjectLike;
  verify(algorithm: null, data: Uint8Array, key: KeyObjectLike, signature: Uint8Array): boolean;
}

/** node:crypto when the runtime has it (Node ≥ 20.16: `process.getBuiltinModule`); null elsewhere. */
function nodeCrypto(): NodeCrypto | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    const c = proc?.getBuiltinModule?.('node:crypto') as Partial<NodeCrypto> | undefined;
    return c && typeof c.verify === 'function' && typeof c.createPublicKey === 'function'
      ? (c as NodeCrypto)
      : null;
  } catch {
    return null;
  }
}

const crypto = nodeCrypto();
/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the 32 key bytes follow. */
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);
/** Keys seen: their native key object, or null when the strict decoder refuses them (then: the curve). */
const keys = new Map<Hex, KeyObjectLike | null>();
const KEYS_MAX = 1024;

function keyObject(c: NodeCrypto, key: Hex): KeyObjectLike | null {
  const known = keys.get(key);
  if (known !== undefined) return known;
  let made: KeyObjectLike | null = null;
  try {
    const bytes = hexToBytes(key);
    // The strict decoder's own rules (it throws on a non-canonical or off-curve encoding).
    if (!ed25519.Point.fromBytes(bytes, false).isSmallOrder()) {
      const der = new Uint8Array(SPKI_PREFIX.length + 32);
      der.set(SPKI_PREFIX, 0);
      der.set(bytes, SPKI_PREFIX.length);
      made = c.createPublicKey({ key: der, format: 'der', type: 'spki' });
    }
  } catch {
    made = null;
  }
  if (keys.size >= KEYS_MAX) keys.delete(keys.keys().next().value as Hex);
  keys.set(key, made);
  return made;
}

/**
 * True only when node:crypto verifies `sig` over `message` under `key` AND the strict verifier accepts the
 * key: then the strict verifier accepts the signature too (above). False decides nothing.
 */
export function nativeConfirms(sig: Uint8Array, message: Uint8Array, key: Hex): boolean {
  if (!crypto) return false;
  const k = keyObject(crypto, key);
  if (!k) return false;
  try {
    return crypto.verify(null, message, k, sig);
  } catch {
    return false;
  }
}

/** Whether this runtime confirms natively (tests, benchmarks). */
export const nativeVerifyAvailable = (): boolean => crypto !== null;
