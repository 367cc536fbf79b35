// Ed25519 signatures over attestations (RFC 8032, strict): a signature signs
// `"sandbox.attestation.sig/1" ‖ address(att)` — the 25-byte ASCII tag, then the 32 address bytes.
// Verification is @noble/curves with `zip215: false`: canonical encodings of R and of the public key,
// S < L, and a small-order public key never verifies (the default, ZIP-215, accepts an identity key with an
// identity signature for every message). Pure: key generation takes its 32 random bytes from the caller.
// Where node:crypto exists, a native accept is taken first (native-verify.ts: it implies the strict accept).
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  type Attestation,
  type AttestationBody,
  type AttestationSignature,
  buildAttestation,
} from './attestation.js';
import { bytesToHex, type Hex, hexToBytes, isAddr } from './bytes.js';
import { RunRecordError } from './errors.js';
import { nativeConfirms } from './native-verify.js';

export const SIGNATURE_TAG = 'sandbox.attestation.sig/1';
const TAG_BYTES = new TextEncoder().encode(SIGNATURE_TAG); // 25 ASCII bytes
const SIG_RE = /^[0-9a-f]{128}$/;
const STRICT = { zip215: false } as const;

/** An Ed25519 key pair. `secretKey` is the RFC 8032 private key: the 32 random bytes it was made from. */
export interface SigningKey {
  readonly secretKey: Uint8Array;
  readonly publicKey: Hex;
}

function secret(key: Uint8Array): Uint8Array {
  if (!(key instanceof Uint8Array) || key.length !== 32)
    throw new RunRecordError('InvalidKey', 'a secret key is 32 bytes');
  return key;
}

/**
 * A key pair from 32 bytes the caller drew from a cryptographic source (e.g. `randomBytes(32)` from
 * `node:crypto`). The same bytes always give the same pair; keep them secret.
 */
export function generateSigningKey(randomBytes: Uint8Array): SigningKey {
  const secretKey = secret(randomBytes).slice();
  return Object.freeze({ secretKey, publicKey: publicKeyOf(secretKey) });
}

/** The public key (64 lowercase hex) of a 32-byte secret key. */
export function publicKeyOf(secretKey: Uint8Array): Hex {
  return bytesToHex(ed25519.getPublicKey(secret(secretKey)));
}

/** The signed message: `"sandbox.attestation.sig/1" ‖ address` (57 bytes). */
export function signatureMessage(address: Hex | Uint8Array): Uint8Array {
  const bytes = typeof address === 'string' ? addressBytes(address) : address;
  if (bytes.length !== 32) throw new RunRecordError('InvalidAttestation', 'an address is 32 bytes');
  const out = new Uint8Array(TAG_BYTES.length + 32);
  out.set(TAG_BYTES, 0);
  out.set(bytes, TAG_BYTES.length);
  return out;
}

function addressBytes(address: Hex): Uint8Array {
  if (!isAddr(address)) throw new RunRecordError('InvalidAttestation', 'not an address');
  return hexToBytes(address);
}

/** Signs an attestation address with a secret key. */
export function signAddress(address: Hex, secretKey: Uint8Array): AttestationSignature {
  const sk = secret(secretKey);
  const sig = ed25519.sign(signatureMessage(address), sk);
  return Object.freeze({ alg: 'ed25519', key: publicKeyOf(sk), sig: bytesToHex(sig) });
}

/**
 * Whether `signature` is a valid strict-RFC-8032 Ed25519 signature of `address`. Anything that is not a
 * well-formed signature (wrong lengths, bad hex, a key or R that is not a canonical point, S ≥ L, a
 * small-order key) is simply `false`.
 */
export function verifyAddressSignature(address: Hex | Uint8Array, signature: AttestationSignature): boolean {
  if (signature.alg !== 'ed25519' || !isAddr(signature.key) || !SIG_RE.test(signature.sig)) return false;
  let message: Uint8Array;
  try {
    message = signatureMessage(address);
  } catch {
    return false;
  }
  const memo = `${bytesToHex(message.subarray(TAG_BYTES.length))}${signature.key}${signature.sig}`;
  if (verified.has(memo)) return true;
  let ok: boolean;
  try {
    const sig = hexToBytes(signature.sig);
    // A native accept is the strict verifier's accept (native-verify.ts); anything else asks the curve.
    ok =
      nativeConfirms(sig, message, signature.key) ||
      ed25519.verify(sig, message, hexToBytes(signature.key), STRICT);
  } catch {
    return false;
  }
  if (ok) {
    if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value as string);
    verified.add(memo);
  }
  return ok;
}

/**
 * The last signatures that verified (address ‖ key ‖ signature, hex): verification is a pure function of
 * the three, so a host that checks one body twice — a control plane before it settles and again as the
 * record appends it — pays for the curve once. Only successes are kept, the oldest dropped first.
 */
const verified = new Set<string>();
const VERIFIED_MAX = 1024;

/**
 * Seals and signs an attestation: the body a record's bundle carries (the fields plus the signature) and its
 * address. Throws `InvalidAttestation` if a field cannot be encoded, `InvalidKey` for a bad secret key.
 */
export function signAttestation(
  attestation: Attestation,
  secretKey: Uint8Array,
): { readonly body: AttestationBody; readonly address: Hex } {
  const sk = secret(secretKey);
  const { attestation: fields, address } = buildAttestation(attestation);
  return { body: Object.freeze({ ...fields, signature: signAddress(address, sk) }), address };
}

/** A trusted key as a caller gives it: 64 hex digits, either case (`InvalidKey` otherwise), lowercased. */
export function parseTrustKey(key: string): Hex {
  const lower = typeof key === 'string' ? key.toLowerCase() : '';
  if (!isAddr(lower)) throw new RunRecordError('InvalidKey', 'a trusted key is 64 hex digits');
  return lower;
}
