// ATTEST, verified records: the implementation's own bundled record edited (a body field, a signature, the
// bundle itself — every "Precise readings" clause), each with the spec's code, at the segment the order of
// checks blames, or with no index where no segment is to blame. Forged records: attest-forged.ts.
import type { PatchOpT, VerifyExpectT } from '../vectors/schema.js';
import { ZEROS } from './addresses.js';
import { addressAt, chainOps, E, flipped, K1, K2, SIGNER_1 } from './attest-fixtures.js';
import { type Case, calls, close, fails, image, resume, suspend } from './define.js';

const C = 'ATTEST' as const;
export const park = image();

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
