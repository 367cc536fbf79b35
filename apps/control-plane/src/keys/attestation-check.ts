// The check every host-signed interval attestation passes first, runner (runners/completion.ts) or paired
// agent host (agents/attestation.ts): a `sandbox.attestation/1` body, signed by the key the host registered,
// the signature verifying over its address, bound to the run's unit and grant set and to the record head at
// the start of the interval. Any mismatch is 409 `attestation_mismatch`; the caller's transaction writes
// nothing. What follows (outcome, journal root, audit chain) is each kind's own.
import {
  type AttestationBody,
  attestationAddress,
  decodeAttestationBody,
  type Hex,
  verifyAddressSignature,
} from '@everdict/runrecord';
import { ControlPlaneError } from '../errors.js';

export const attestationMismatch = (message: string, details: Record<string, unknown> = {}) =>
  new ControlPlaneError('attestation_mismatch', message, details);

/** `raw` as a `sandbox.attestation/1` body and its address; 409 when it is not one. */
export function decodeAttestation(raw: unknown): { body: AttestationBody; address: Hex } {
  let body: AttestationBody;
  try {
    body = decodeAttestationBody(raw);
  } catch (e) {
    throw attestationMismatch(`the attestation is not a sandbox.attestation/1 body: ${(e as Error).message}`);
  }
  return { body, address: attestationAddress(body) };
}

/** Who signed and what for, as the refusals name them ("runner" / "run" / "lease"; "agent host" / "turn" / "interval"). */
export interface AttestationSubject {
  readonly host: 'runner' | 'agent host';
  readonly unit: 'run' | 'turn';
  readonly span: 'lease' | 'interval';
}

/** The run columns the check reads. */
export interface AttestedRun {
  readonly unit_id: string;
  readonly grants_id: string;
  readonly interval_head: string | null;
  readonly record_head: string;
}

/** A refusal unless `body` is signed by `publicKey`, verifies, and is bound to `run`'s unit, grants and interval head. */
export function checkSignedInterval(
  body: AttestationBody,
  address: Hex,
  publicKey: string,
  run: AttestedRun,
  subject: AttestationSubject,
): void {
  const sig = body.signature;
  if (!sig) throw attestationMismatch('the attestation is not signed');
  if (sig.key !== publicKey)
    throw attestationMismatch(
      `the attestation is signed by another key than this ${subject.host} registered`,
      {
        key: sig.key,
      },
    );
  if (!verifyAddressSignature(address, sig)) throw attestationMismatch('the signature does not verify');
  if (body.unitId !== run.unit_id || body.grantsId !== run.grants_id)
    throw attestationMismatch(`the attestation names another unit or grant set than this ${subject.unit}`);
  const head = run.interval_head ?? run.record_head;
  if (body.recordHead !== head)
    throw attestationMismatch(
      `the attestation is not bound to the record head at the start of this ${subject.span}`,
      { expected: head },
    );
}
