// The runner's attestation signer: the same `sandbox.attestation/1` body and Ed25519 signature as
// `signAttestation` of @everdict/runrecord (Ed25519 is deterministic: the bytes are identical, tested in
// signer.test.ts), made with node:crypto's native Ed25519 from a key object built once — the pure-JS
// signer recomputed the public key on every signature, a few milliseconds of the runner's one thread per
// interval (README, "Figures").
import { createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';
import {
  type Attestation,
  type AttestationBody,
  buildAttestation,
  type Hex,
  type SigningKey,
  signatureMessage,
} from '@everdict/runrecord';
import { RunnerError } from './errors.js';

/** PKCS#8 DER of an Ed25519 private key, up to its 32 bytes (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

export type AttestationSigner = (attestation: Attestation) => {
  readonly body: AttestationBody;
  readonly address: Hex;
};

const signers = new WeakMap<SigningKey, AttestationSigner>();

/** The signer of `key` (made once per key object); refuses a key whose public half is not its own. */
export function attestationSigner(key: SigningKey): AttestationSigner {
  const known = signers.get(key);
  if (known) return known;
  const secret: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, key.secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(secret).export({ format: 'der', type: 'spki' });
  if (spki.subarray(spki.length - 32).toString('hex') !== key.publicKey)
    throw new RunnerError('bad_state', 'the signing key does not match its public key');
  const signer: AttestationSigner = (attestation) => {
    const { attestation: fields, address } = buildAttestation(attestation);
    const sig = sign(null, signatureMessage(address), secret).toString('hex');
    return {
      body: Object.freeze({
        ...fields,
        signature: Object.freeze({ alg: 'ed25519', key: key.publicKey, sig }),
      }),
      address,
    };
  };
  signers.set(key, signer);
  return signer;
}
