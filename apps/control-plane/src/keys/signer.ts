// The control plane's own Ed25519 key: it signs the attestations of the intervals it executes inline.
// Generated on first start (32 random bytes, stored as 64 hex chars in a file of mode 0600), reused on
// every restart. Signing uses node:crypto (OpenSSL) — the same RFC 8032 signatures runrecord's strict
// verifier checks, at a fraction of the pure-JS cost on the settle path.
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type AttestationSignature, bytesToHex, type Hex, signatureMessage } from '@everdict/runrecord';

/** PKCS#8 DER prefix of an Ed25519 private key (RFC 8410); the 32 secret bytes follow. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SECRET_HEX = /^[0-9a-f]{64}$/;

/** What signs an interval's attestation address. */
export interface Signer {
  /** The public key, 64 lowercase hex (what GET /keys publishes and verifiers trust). */
  readonly publicKey: Hex;
  sign(address: Hex): AttestationSignature;
}

export function signerOf(secretKey: Uint8Array): Signer {
  if (secretKey.length !== 32) throw new Error('an Ed25519 secret key is 32 bytes');
  const key: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  const publicKey = bytesToHex(new Uint8Array(spki.subarray(spki.length - 32)));
  return {
    publicKey,
    sign: (address) => ({
      alg: 'ed25519',
      key: publicKey,
      sig: sign(null, signatureMessage(address), key).toString('hex'),
    }),
  };
}

/** A fresh in-memory key (a core with no data directory: tests, in-memory PGlite). */
export const ephemeralSigner = (): Signer => signerOf(randomBytes(32));

/**
 * The secret key stored at `file`, created (mode 0600, exclusively) on first use. A file readable by
 * group or others is refused: the key signs what this control plane claims it ran.
 */
export function loadOrCreateSecret(file: string): Uint8Array {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600); // the umask cannot widen it, but be explicit
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new Error(`signing key ${file} has mode ${mode.toString(8)}; it must be 0600 (chmod 600 it)`);
  const text = readFileSync(file, 'utf8').trim();
  if (!SECRET_HEX.test(text)) throw new Error(`signing key ${file} is not 64 lowercase hex characters`);
  return new Uint8Array(Buffer.from(text, 'hex'));
}
