// Ed25519 (RFC 8032) through @noble/curves in strict mode: `zip215: false` rejects non-canonical
// encodings and small-order public keys, so the identity key with the identity signature — which
// ZIP-215 accepts for every message — never verifies here.
import { ed25519 } from '@noble/curves/ed25519.js';
import { HeadLogError } from './errors.js';

export interface KeyPair {
  /** The 32-byte RFC 8032 seed. */
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

/** A key pair from a 32-byte seed (a log key file holds the seed). */
export function keyPairFromSeed(seed: Uint8Array): KeyPair {
  if (seed.length !== 32) throw new HeadLogError('InvalidKey', 'an Ed25519 seed is 32 bytes');
  const { secretKey, publicKey } = ed25519.keygen(seed);
  return { secretKey, publicKey };
}

/** A fresh key pair from the platform's CSPRNG. */
export function generateKeyPair(): KeyPair {
  return keyPairFromSeed(ed25519.utils.randomSecretKey());
}

export function sign(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  if (secretKey.length !== 32) throw new HeadLogError('InvalidKey', 'an Ed25519 secret key is 32 bytes');
  return ed25519.sign(message, secretKey);
}

/** Strict RFC 8032 verification; false (never a throw) for wrong lengths, bad points or small-order keys. */
export function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false;
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}
