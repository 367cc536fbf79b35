// The runner's attestation signer: the same `sandbox.attestation/1` body and Ed25519 signature as
// `signAttestation` of @everdict/runrecord (Ed25519 is deterministic: the bytes are identical, tested in
// signer.test.ts), made with node:crypto's native Ed25519 from a key object built once — the pure-JS
// signer recomputed the public key on every signature, a few milliseconds of the runner's one thread per
// interval (README, "Figures"). The signer is the agent host's too: @everdict/client/host-identity.
import { type AttestationSigner, attestationSigner as hostSigner } from '@everdict/client/host-identity';
import type { SigningKey } from '@everdict/runrecord';
import { RunnerError } from './errors.js';

export type { AttestationSigner };

/** The signer of `key` (made once per key object); refuses a key whose public half is not its own. */
export function attestationSigner(key: SigningKey): AttestationSigner {
  return hostSigner(key, (message) => new RunnerError('bad_state', message));
}
