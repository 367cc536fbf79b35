// ATTEST, verified records: the implementation's own bundled record edited (a body field, a signature, the
// bundle itself — every "Precise readings" clause), and records forged by the reference whose heads all
// recompute but whose bundle breaks exactly one of rules 6–9 (moved, replayed, small-order keys,
// non-canonical S, untrusted, unbundled) — each with the spec's code, at the segment the order of checks
// blames, or with no index where no segment is to blame.
import type { PatchOpT, VerifyExpectT } from '../vectors/schema.js';
import { att, GRANTS_B, UNIT_B, ZEROS } from './addresses.js';
import {
  addressAt,
  attested,
  bodyAt,
  chainOps,
  E,
  flipped,
  IDENTITY_KEY,
  IDENTITY_KEY_NONCANONICAL,
  IDENTITY_SIG,
  K1,
  K2,
  ORDER_8_KEY,
  SIGNER_1,
  SIGNER_2,
  signatureOf,
  withNonCanonicalS,
} from './attest-fixtures.js';
import { type Case, calls, close, execute, fails, image, resume, suspend } from './define.js';

const C = 'ATTEST' as const;
const park = image();

/** The record the tamper cases edit: E1(signed, dispatch c1) · S · R · E2(signed, resolve c1) · close. */
const BASE = chainOps([
  E(1, SIGNER_1, {}, calls(['c1'])),
  suspend(park),
  resume(park),
  E(2, SIGNER_1, {}, calls([], ['c1'])),
  close('completed'),
]);
const A0 = addressAt(BASE, 0);
const A3 = addressAt(BASE, 3);
const at = (address: string, field: string) => `/attestations/${address}/${field}`;
const body0 = (BASE[0] as { body: Record<string, unknown> }).body;
const sig0 = (body0.signature as { sig: string }).sig;

function tamper(
  name: string,
  description: string,
  patch: PatchOpT[],
  expect: VerifyExpectT,
  extra: { trust_keys?: string[]; expect_head?: string } = {},
): Case {
  return { kind: 'tamper', class: C, name, description, ops: BASE, patch, expect, ...extra };
}

function forged(
  name: string,
  description: string,
  steps: readonly unknown[],
  expect: VerifyExpectT,
  extra: { trust_keys?: string[]; attestations?: Record<string, unknown>; patch?: PatchOpT[] } = {},
): Case {
  return { kind: 'verify', class: C, name, description, ops: chainOps(steps), expect, ...extra };
}

const replace = (path: string, value: unknown): PatchOpT => ({ op: 'replace', path, value });
const add = (path: string, value: unknown): PatchOpT => ({ op: 'add', path, value });
const remove = (path: string): PatchOpT => ({ op: 'remove', path });
const BASE_COST = { active_uj: '25200000', idle_uj: '1250000', total_uj: '26450000', unresolved: 0 };

export const ATTEST_TAMPER_CASES: readonly Case[] = [
  tamper(
    'tamper-none-verifies-trusted',
    'The untouched bundled record verifies with its signer trusted (control case).',
    [],
    { ok: true, account: 'non_blocking', phase: 'closed', cost: BASE_COST, signed_by: [K1] },
    { trust_keys: [K1] },
  ),
  tamper(
    'tamper-body-active-uj',
    'The first body’s active_uj lowered: it no longer hashes to the address, AttestationMismatch at 0.',
    [replace(at(A0, 'active_uj'), '1')],
    fails('AttestationMismatch', 0),
  ),
  tamper(
    'tamper-body-meter',
    'The second body’s meter relabelled: AttestationMismatch at 3.',
    [replace(at(A3, 'meter'), 'rapl')],
    fails('AttestationMismatch', 3),
  ),
  tamper(
    'tamper-body-record-head',
    'The first body’s record_head edited: AttestationMismatch at 0.',
    [replace(at(A0, 'record_head'), ZEROS)],
    fails('AttestationMismatch', 0),
  ),
  tamper(
    'tamper-body-exit-code',
    'The second body’s exit_code edited: AttestationMismatch at 3.',
    [replace(at(A3, 'exit_code'), 1)],
    fails('AttestationMismatch', 3),
  ),
  tamper(
    'tamper-body-audit-prev-added',
    'An audit_prev added to the second body: AttestationMismatch at 3.',
    [add(at(A3, 'audit_prev'), A0)],
    fails('AttestationMismatch', 3),
  ),
  tamper(
    'tamper-signature-removed',
    'A signature removed, no key trusted: still verifies; signed_by keeps the other signer.',
    [remove(at(A0, 'signature'))],
    { ok: true, cost: BASE_COST, signed_by: [K1] },
  ),
  tamper(
    'tamper-signature-removed-trusted',
    'A signature removed, its key trusted: UntrustedAttestation at 0.',
    [remove(at(A0, 'signature'))],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K1] },
  ),
  tamper(
    'tamper-signature-key-swapped',
    'The signature claims signer 2’s key: BadSignature at 0.',
    [replace(at(A0, 'signature/key'), K2)],
    fails('BadSignature', 0),
  ),
  tamper(
    'tamper-signature-bit-flipped',
    'One digit of the second signature changed: BadSignature at 3.',
    [replace(at(A3, 'signature/sig'), flipped(sig0, 100))],
    fails('BadSignature', 3),
  ),
  tamper(
    'tamper-untrusted-signer',
    'Signed by signer 1, only signer 2 trusted: UntrustedAttestation at 0.',
    [],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K2] },
  ),
  tamper(
    'tamper-bundle-removed',
    'The whole bundle removed: verifies, both executed segments unresolved, nobody signed.',
    [remove('/attestations')],
    { ok: true, cost: { ...BASE_COST, active_uj: '0', total_uj: '1250000', unresolved: 2 }, signed_by: [] },
  ),
  tamper(
    'tamper-bundle-removed-trusted',
    'The whole bundle removed, a key trusted: UntrustedAttestation at 0 (never proven by absence).',
    [remove('/attestations')],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K1] },
  ),
  tamper(
    'tamper-bundle-empty',
    '"attestations": {} is a bundle with no entry: verifies, both segments unresolved.',
    [replace('/attestations', {})],
    { ok: true, cost: { ...BASE_COST, active_uj: '0', total_uj: '1250000', unresolved: 2 } },
  ),
  tamper(
    'tamper-bundle-null',
    '"attestations": null: MalformedRecord with no index, before the first segment.',
    [replace('/attestations', null)],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-bundle-list',
    '"attestations" as a list: MalformedRecord with no index.',
    [replace('/attestations', [])],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-bundle-null-before-segment-error',
    '"attestations": null and a segment edited: the bundle is read first, MalformedRecord, no index.',
    [replace('/attestations', null), replace('/segments/2/idle_uj', '1')],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-orphan-entry',
    'A copy of a body under an address no segment names: MalformedRecord with no index.',
    [add(`/attestations/${ZEROS}`, body0)],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-orphan-before-head-field',
    'An orphan entry and a wrong record head field: the orphan is checked first (MalformedRecord).',
    [add(`/attestations/${ZEROS}`, body0), replace('/head', ZEROS)],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-orphan-before-expect-head',
    'An orphan entry and a wrong --expect-head: MalformedRecord.',
    [add(`/attestations/${ZEROS}`, body0)],
    fails('MalformedRecord', null),
    { expect_head: ZEROS },
  ),
  tamper(
    'tamper-orphan-after-segment-error',
    'An orphan entry and an edited segment: the segment’s HeadMismatch wins.',
    [add(`/attestations/${ZEROS}`, body0), replace('/segments/2/idle_uj', '1')],
    fails('HeadMismatch', 2),
  ),
  tamper(
    'tamper-orphan-after-untrusted',
    'An orphan entry and an untrusted signer: UntrustedAttestation at 0 wins.',
    [add(`/attestations/${ZEROS}`, body0)],
    fails('UntrustedAttestation', 0),
    { trust_keys: [K2] },
  ),
  ...(
    [
      ['unknown-field', add(at(A0, 'note'), 'x')],
      ['audit-prev-null', add(at(A0, 'audit_prev'), null)],
      ['missing-meter', remove(at(A0, 'meter'))],
      ['active-uj-number', replace(at(A0, 'active_uj'), 8400000)],
      ['started-ms-beyond-u64', replace(at(A0, 'started_ms'), '18446744073709551616')],
      ['ended-ms-leading-zero', replace(at(A0, 'ended_ms'), '01764600004200')],
      ['exit-code-string', replace(at(A0, 'exit_code'), '0')],
      ['exit-code-fraction', replace(at(A0, 'exit_code'), 0.5)],
      ['exit-code-below-i32', replace(at(A0, 'exit_code'), -2147483649)],
      ['outcome-unknown', replace(at(A0, 'outcome'), 'done')],
      ['provenance-unknown', replace(at(A0, 'provenance'), 'guessed')],
      ['signature-null', replace(at(A0, 'signature'), null)],
      ['signature-alg', replace(at(A0, 'signature/alg'), 'EdDSA')],
      ['signature-extra-field', add(at(A0, 'signature/note'), 'x')],
      ['signature-short-key', replace(at(A0, 'signature/key'), K1.slice(2))],
      ['signature-short-sig', replace(at(A0, 'signature/sig'), sig0.slice(2))],
      ['signature-missing-sig', remove(at(A0, 'signature/sig'))],
    ] as const
  ).map(([what, op]) =>
    tamper(
      `tamper-malformed-body-${what}`,
      `A body that is not exactly a well-formed body (${what.replaceAll('-', ' ')}): MalformedRecord at 0, its naming segment.`,
      [op],
      fails('MalformedRecord', 0),
    ),
  ),
  tamper(
    'tamper-malformed-body-after-head-mismatch',
    'A malformed body at a segment whose head does not recompute: HeadMismatch comes first.',
    [add(at(A0, 'note'), 'x'), replace('/segments/0/account/dispatched/0', 'c9')],
    fails('HeadMismatch', 0),
  ),
];

/** Interval 1's body signed by signer 1 at `h`, its signature then replaced. */
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
