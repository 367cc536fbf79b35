// ATTEST, forged records: built by the reference so that every head recomputes, but the bundle breaks
// exactly one of rules 6–9 (moved, replayed, small-order keys, non-canonical S, untrusted, unbundled) — each
// with the spec's code at the segment the order of checks blames.
import type { PatchOpT, VerifyExpectT } from '../vectors/schema.js';
import { att, GRANTS_B, UNIT_B, ZEROS } from './addresses.js';
import {
  attested,
  bodyAt,
  chainOps,
  E,
  flipped,
  IDENTITY_KEY,
  IDENTITY_KEY_NONCANONICAL,
  IDENTITY_SIG,
  K1,
  ORDER_8_KEY,
  SIGNER_1,
  SIGNER_2,
  signatureOf,
  withNonCanonicalS,
} from './attest-fixtures.js';
import { park } from './attest-tamper.js';
import { type Case, execute, fails, resume, suspend } from './define.js';

const C = 'ATTEST' as const;

function forged(
  name: string,
  description: string,
  steps: readonly unknown[],
  expect: VerifyExpectT,
  extra: { trust_keys?: string[]; attestations?: Record<string, unknown>; patch?: PatchOpT[] } = {},
): Case {
  return { kind: 'verify', class: C, name, description, ops: chainOps(steps), expect, ...extra };
}

const resigned = (h: string, signature: Record<string, unknown>) => ({ ...bodyAt(h, 1, null), signature });

export const ATTEST_FORGED_CASES: readonly Case[] = [
  forged(
    'forged-moved-to-another-unit',
    'A correctly addressed and signed body of unit B in a record of unit A: AttestationMismatch at 0.',
    [(h: string) => attested(bodyAt(h, 1, SIGNER_1, { unit_id: UNIT_B }))],
    fails('AttestationMismatch', 0),
  ),
  forged(
    'forged-moved-to-another-grant-set',
    'A body under grant set B: AttestationMismatch at 1.',
    [execute(att(9)), (h: string) => attested(bodyAt(h, 1, SIGNER_1, { grants_id: GRANTS_B }))],
    fails('AttestationMismatch', 1),
  ),
  forged(
    'forged-moved-to-another-position',
    'A body bound to the head before segment 1, named by segment 2: AttestationMismatch at 2.',
    (() => {
      let before1 = '';
      return [
        execute(att(9)),
        (h: string) => {
          before1 = h;
          return execute(att(8));
        },
        () => attested(bodyAt(before1, 1)),
      ];
    })(),
    fails('AttestationMismatch', 2),
  ),
  forged(
    'forged-replayed-twice',
    'One bundled body named by two executed segments: the replay, at 3, is AttestationMismatch.',
    (() => {
      let first: unknown;
      return [
        (h: string) => {
          first = attested(bodyAt(h, 1));
          return first;
        },
        suspend(park),
        resume(park),
        () => first,
      ];
    })(),
    fails('AttestationMismatch', 3),
  ),
  forged(
    'forged-body-of-another-address',
    'Segment 0 names att-1; the bundle holds, under att-1, a body hashing elsewhere: AttestationMismatch.',
    [(h: string) => attested(bodyAt(h, 1), undefined, att(1))],
    fails('AttestationMismatch', 0),
  ),
  forged(
    'forged-small-order-identity-key',
    'The identity key with R = identity, S = 0 (valid for every message under ZIP-215): BadSignature.',
    [(h: string) => attested(resigned(h, { alg: 'ed25519', key: IDENTITY_KEY, sig: IDENTITY_SIG }))],
    fails('BadSignature', 0),
  ),
  forged(
    'forged-small-order-order-8-key',
    'A point of order 8 as the key with R = identity, S = 0: BadSignature.',
    [(h: string) => attested(resigned(h, { alg: 'ed25519', key: ORDER_8_KEY, sig: IDENTITY_SIG }))],
    fails('BadSignature', 0),
  ),
  forged(
    'forged-non-canonical-identity-key',
    'The identity encoded as y = p + 1 (accepted by ZIP-215): BadSignature.',
    [
      (h: string) =>
        attested(resigned(h, { alg: 'ed25519', key: IDENTITY_KEY_NONCANONICAL, sig: IDENTITY_SIG })),
    ],
    fails('BadSignature', 0),
  ),
  forged(
    'forged-non-canonical-s',
    'A valid signature with S replaced by S + L (the same scalar, not canonical): BadSignature.',
    [
      (h: string) => {
        const b = bodyAt(h, 1);
        const s = b.signature as { sig: string };
        return attested({ ...b, signature: { ...s, sig: withNonCanonicalS(s.sig) } });
      },
    ],
    fails('BadSignature', 0),
  ),
  forged(
    'forged-bad-signature-by-untrusted-key',
    'A bad signature by an untrusted key: BadSignature (rule 8 before rule 9).',
    [
      (h: string) => {
        const b = bodyAt(h, 1, SIGNER_2);
        return attested({ ...b, signature: { ...(b.signature as object), sig: flipped(sigOf(b)) } });
      },
    ],
    fails('BadSignature', 0),
    { trust_keys: [K1] },
  ),
  forged(
    'forged-binding-before-signature',
    'Bound to another position and badly signed: AttestationMismatch (rule 7 before rule 8).',
    (() => {
      const elsewhere = bodyAt(ZEROS, 1, null);
      const sig = signatureOf(elsewhere, SIGNER_1);
      return [execute(att(9)), attested({ ...elsewhere, signature: { ...sig, sig: flipped(sig.sig) } })];
    })(),
    fails('AttestationMismatch', 1),
  ),
  forged(
    'forged-unbundled-segment-untrusted',
    'With a trusted key, an executed segment whose attestation is not bundled: UntrustedAttestation at 1.',
    [E(1), execute(att(2))],
    fails('UntrustedAttestation', 1),
    { trust_keys: [K1] },
  ),
  forged(
    'forged-unsigned-body-untrusted',
    'With a trusted key, an unsigned body: UntrustedAttestation at 0.',
    [E(1, null)],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K1] },
  ),
  forged(
    'forged-empty-trust-everywhere',
    'Trusted keys given, no body anywhere: the first executed segment is UntrustedAttestation.',
    [execute(att(1)), execute(att(2))],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K1], attestations: {} },
  ),
  forged(
    'forged-phase-before-malformed-body',
    'An execute while parked naming a malformed body: PhaseViolation at 2 (rule 6 runs after phase).',
    [execute(att(1)), suspend(park), (h: string) => attested({ ...bodyAt(h, 1), note: 'x' })],
    fails('PhaseViolation', 2),
  ),
  forged(
    'forged-earlier-segment-wins',
    'Unbundled segment 0 with a trusted key, a malformed body at 1: UntrustedAttestation at 0.',
    [execute(att(1)), (h: string) => attested({ ...bodyAt(h, 1), note: 'x' })],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K1] },
  ),
  forged(
    'forged-malformed-orphan-entry',
    'An entry no segment names whose value is not a body (null): MalformedRecord with no index.',
    [E(1)],
    fails('MalformedRecord', null),
    { attestations: { [ZEROS]: null } },
  ),
  forged(
    'forged-orphan-key-not-an-address',
    'An entry keyed by something that is not an address: no segment names it, MalformedRecord.',
    [E(1)],
    fails('MalformedRecord', null),
    { attestations: { 'not-an-address': {} } },
  ),
];

function sigOf(body: Record<string, unknown>): string {
  return (body.signature as { sig: string }).sig;
}
