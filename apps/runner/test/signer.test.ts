// The native signer makes exactly the body and signature runrecord's pure-JS `signAttestation` makes (Ed25519
// is deterministic), which verify; a key whose public half is another's is refused.
import { randomBytes } from 'node:crypto';
import {
  type Attestation,
  bytesToHex,
  encodeAttestationBody,
  generateSigningKey,
  signAttestation,
  verifyAddressSignature,
} from '@everdict/runrecord';
import { describe, expect, it } from 'vitest';
import { attestationSigner } from '../src/signer.js';

const hex = () => bytesToHex(randomBytes(32));

function attestation(i: number): Attestation {
  return {
    unitId: hex(),
    grantsId: hex(),
    recordHead: hex(),
    startedMs: BigInt(1_700_000_000_000 + i),
    endedMs: BigInt(1_700_000_000_100 + i),
    activeUj: BigInt(i * 1000),
    provenance: i % 2 === 0 ? 'estimated' : 'measured',
    meter: 'cgroup-cpu-model',
    journalRoot: hex(),
    outcome: i % 3 === 0 ? 'failed' : 'succeeded',
    exitCode: i % 3 === 0 ? 1 : 0,
    ...(i % 2 === 1 ? { auditPrev: hex() } : {}),
  };
}

describe('attestationSigner', () => {
  it('signs exactly as signAttestation does, and the signature verifies', () => {
    for (let k = 0; k < 4; k++) {
      const key = generateSigningKey(randomBytes(32));
      const sign = attestationSigner(key);
      for (let i = 0; i < 8; i++) {
        const a = attestation(i);
        const native = sign(a);
        const pure = signAttestation(a, key.secretKey);
        expect(native.address).toBe(pure.address);
        expect(encodeAttestationBody(native.body)).toEqual(encodeAttestationBody(pure.body));
        expect(native.body.signature?.key).toBe(key.publicKey);
        expect(verifyAddressSignature(native.address, native.body.signature!)).toBe(true);
      }
    }
  });

  it('refuses a key whose public half is not its own', () => {
    const a = generateSigningKey(randomBytes(32));
    const b = generateSigningKey(randomBytes(32));
    expect(() => attestationSigner({ secretKey: a.secretKey, publicKey: b.publicKey })).toThrow(
      /does not match/,
    );
  });
});
