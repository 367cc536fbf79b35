// ATTEST, built records: bodies bundled by `build` (each bound to its record and position, signed or not),
// the `att` layout pinned by hand, cost (exact sums past 2^53 and past u64, unresolved counting segments)
// and signed_by (distinct keys, first-seen order); and every refusal of `build` with a body, in the order
// of checks: RecordClosed → malformed → PhaseViolation → AttestationMismatch → BadSignature.
import type { ErrorCodeT } from '../contract/schemas.js';
import { genesis } from '../reference/chain.js';
import { att, GRANTS_A, GRANTS_B, UNIT_A, UNIT_B } from './addresses.js';
import {
  addressOf,
  attested,
  bodyAt,
  chainOps,
  E,
  flipped,
  IDENTITY_KEY,
  IDENTITY_SIG,
  journal,
  K1,
  K2,
  SIGNER_1,
  SIGNER_2,
  U64_MAX,
} from './attest-fixtures.js';
import { type Case, calls, close, execute, image, resume, suspend } from './define.js';

const C = 'ATTEST' as const;
const G = genesis(UNIT_A, GRANTS_A);
const park = image();
const TAG = '73616e64626f782e6174746573746174696f6e2f31'; // "sandbox.attestation/1"
const SIG_TAG = '73616e64626f782e6174746573746174696f6e2e7369672f31'; // "sandbox.attestation.sig/1"

function built(
  name: string,
  description: string,
  steps: readonly unknown[],
  verify: NonNullable<Extract<Case, { kind: 'build' }>['verify']>,
  extra: Partial<Extract<Case, { kind: 'build' }>> = {},
): Case {
  return { kind: 'build', class: C, name, description, ops: chainOps(steps), verify, ...extra };
}

function refused(
  name: string,
  description: string,
  steps: readonly unknown[],
  error: ErrorCodeT,
  index: number,
): Case {
  return { kind: 'build', class: C, name, description, ops: chainOps(steps), refuse: { error, index } };
}

const cost = (active_uj: string, idle_uj: string, total_uj: string, unresolved: number) => ({
  active_uj,
  idle_uj,
  total_uj,
  unresolved,
});

// Interval 1 at genesis, signed by signer 1: its att bytes, by hand.
const FIRST = bodyAt(G, 1);
const FIRST_ADDRESS = addressOf(FIRST);
// Interval 1 at genesis with every other variant of each field: measured, a UTF-8 meter, yielded, a
// negative exit code, and audit_prev (the first body's address), signed by signer 2.
const SECOND = bodyAt(G, 1, SIGNER_2, {
  provenance: 'measured',
  meter: 'rapl · µ',
  outcome: 'yielded',
  exit_code: -1,
  audit_prev: FIRST_ADDRESS,
});
const SECOND_ADDRESS = addressOf(SECOND);

export const ATTEST_BUILD_CASES: readonly Case[] = [
  built(
    'bundle-signed-interval-pinned',
    'One interval with its signed body: bundled under its address; the att bytes are pinned by hand.',
    [attested(FIRST)],
    { cost: cost('8400000', '0', '8400000', 0), signed_by: [K1] },
    {
      trust_keys: [K1],
      pinned_attestations: [
        {
          address: FIRST_ADDRESS,
          layout:
            '"sandbox.attestation/1" ‖ unit ‖ grants ‖ record_head ‖ u64 started ‖ u64 ended ‖ u64 active ‖ 02 estimated ‖ str "cgroup-cpu-model" ‖ journal_root ‖ 01 succeeded ‖ i32 0 ‖ 00',
          att_hex: `${TAG} ${UNIT_A} ${GRANTS_A} ${G} 0000019ada5b2e00 0000019ada5b3e68 0000000000802c80 02 00000010 6367726f75702d6370752d6d6f64656c ${journal(1)} 01 00000000 00`,
          signed_hex: `${SIG_TAG} ${FIRST_ADDRESS}`,
        },
      ],
    },
  ),
  built(
    'bundle-audit-prev-pinned',
    'Measured, a UTF-8 meter, yielded, exit −1 and audit_prev: each byte pinned by hand.',
    [attested(SECOND)],
    { cost: cost('8400000', '0', '8400000', 0), signed_by: [K2] },
    {
      pinned_attestations: [
        {
          address: SECOND_ADDRESS,
          layout:
            '"sandbox.attestation/1" ‖ unit ‖ grants ‖ record_head ‖ u64 ×3 ‖ 01 measured ‖ str "rapl · µ" ‖ journal_root ‖ 03 yielded ‖ i32 −1 ‖ 01 ‖ audit_prev',
          att_hex: `${TAG} ${UNIT_A} ${GRANTS_A} ${G} 0000019ada5b2e00 0000019ada5b3e68 0000000000802c80 01 0000000a 7261706c20c2b720c2b5 ${journal(1)} 03 ffffffff 01 ${FIRST_ADDRESS}`,
          signed_hex: `${SIG_TAG} ${SECOND_ADDRESS}`,
        },
      ],
    },
  ),
  built(
    'bundle-full-cycle-trusted',
    'Execute → park → resume → execute → close, both bodies signed: verifies with --trust-key.',
    [
      E(1, SIGNER_1, {}, calls(['c1'])),
      suspend(park),
      resume(park),
      E(2, SIGNER_1, {}, calls([], ['c1'])),
      close('completed'),
    ],
    {
      account: 'non_blocking',
      phase: 'closed',
      cost: cost('25200000', '1250000', '26450000', 0),
      signed_by: [K1],
    },
    { trust_keys: [K1] },
  ),
  built(
    'bundle-signers-first-seen-order',
    'Signed by 2, unsigned, by 1, by 2 again: signed_by lists 2 then 1.',
    [E(1, SIGNER_2), E(2, null), E(3, SIGNER_1), E(4, SIGNER_2)],
    { cost: cost('84000000', '0', '84000000', 0), signed_by: [K2, K1] },
  ),
  built(
    'bundle-trusted-either-key',
    'Two trusted keys, each signing one interval: both are trusted.',
    [E(1, SIGNER_1), E(2, SIGNER_2)],
    { cost: cost('25200000', '0', '25200000', 0), signed_by: [K1, K2] },
    { trust_keys: [K2, K1] },
  ),
  built(
    'bundle-unsigned-without-trust',
    'An unsigned body verifies when no key is trusted; nobody signed.',
    [E(1, null)],
    { cost: cost('8400000', '0', '8400000', 0), signed_by: [] },
  ),
  built(
    'no-bundle-cost-unresolved-per-segment',
    'No body: no attestations key; three executed segments (one address twice) are three unresolved.',
    [execute(att(1)), execute(att(1)), execute(att(2))],
    { cost: cost('0', '0', '0', 3), signed_by: [] },
  ),
  built(
    'cost-partially-bundled',
    'Two bodies, two unbundled segments and a park: active counts the bodies, unresolved the rest.',
    [E(1), execute(att(2)), suspend(park), resume(park, '4000'), E(3, null), execute(att(2))],
    { cost: cost('33600000', '4000', '33604000', 2), signed_by: [K1] },
  ),
  built(
    'cost-active-u64-max',
    'One body with active_uj = 2^64 − 1.',
    [E(1, SIGNER_1, { active_uj: U64_MAX })],
    { cost: cost(U64_MAX, '0', U64_MAX, 0) },
  ),
  built(
    'cost-sum-beyond-u64',
    'Two u64-max bodies and a u64-max park: the sums are exact decimals past 2^64 − 1.',
    [
      E(1, SIGNER_1, { active_uj: U64_MAX }),
      suspend(park),
      resume(park, U64_MAX),
      E(2, SIGNER_1, { active_uj: U64_MAX }),
    ],
    { cost: cost('36893488147419103230', U64_MAX, '55340232221128654845', 0) },
  ),
  built(
    'cost-sum-crosses-2-53',
    'Σ of 2^53 − 1 and 2 active microjoules: exact (a JS number would print 9007199254740992).',
    [E(1, SIGNER_1, { active_uj: '9007199254740991' }), E(2, SIGNER_1, { active_uj: '2' })],
    { cost: cost('9007199254740993', '0', '9007199254740993', 0) },
  ),
  built(
    'body-u64-and-i32-extremes',
    'started_ms 0, ended_ms 2^64 − 1, exit_code −2^31 and 2^31 − 1 are well formed.',
    [
      E(1, SIGNER_1, { started_ms: '0', ended_ms: U64_MAX, exit_code: -2147483648 }),
      E(2, SIGNER_1, { exit_code: 2147483647, outcome: 'cancelled' }),
    ],
    { cost: cost('25200000', '0', '25200000', 0), signed_by: [K1] },
  ),
  refused(
    'refuse-body-of-another-address',
    'The op names att-1 but carries a body of another address: AttestationMismatch.',
    [attested(bodyAt(G, 1), undefined, att(1))],
    'AttestationMismatch',
    0,
  ),
  refused(
    'refuse-body-of-another-unit',
    'A body of unit B in a record of unit A: AttestationMismatch, record unchanged.',
    [execute(att(9)), (h: string) => attested(bodyAt(h, 1, SIGNER_1, { unit_id: UNIT_B }))],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-body-of-another-grant-set',
    'A body under grant set B: AttestationMismatch.',
    [execute(att(9)), (h: string) => attested(bodyAt(h, 1, SIGNER_1, { grants_id: GRANTS_B }))],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-body-bound-to-another-position',
    'A body whose record_head is the head before an earlier segment: AttestationMismatch.',
    [execute(att(9)), attested(bodyAt(G, 1))],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-body-replayed',
    'The first interval’s body carried again by a later op: its record_head binds it to 0.',
    [attested(FIRST), attested(FIRST)],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-bundled-address-without-body',
    'An op without a body naming an address an earlier op bundled: AttestationMismatch.',
    [attested(FIRST), execute(FIRST_ADDRESS)],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-bad-signature',
    'A signature with one digit changed: BadSignature.',
    [attested({ ...FIRST, signature: { ...(FIRST.signature as object), sig: flipped(sigOf(FIRST)) } })],
    'BadSignature',
    0,
  ),
  refused(
    'refuse-small-order-key',
    'The identity key with the identity signature (valid under ZIP-215): BadSignature.',
    [attested({ ...FIRST, signature: { alg: 'ed25519', key: IDENTITY_KEY, sig: IDENTITY_SIG } })],
    'BadSignature',
    0,
  ),
  refused(
    'refuse-binding-before-signature',
    'Bound to another position and badly signed: AttestationMismatch (rule 7 before rule 8).',
    [
      execute(att(9)),
      attested({ ...FIRST, signature: { ...(FIRST.signature as object), sig: flipped(sigOf(FIRST)) } }),
    ],
    'AttestationMismatch',
    1,
  ),
  refused(
    'refuse-phase-before-binding',
    'An execute while parked, carrying a body bound elsewhere: PhaseViolation comes first.',
    [execute(att(1)), suspend(park), attested(FIRST)],
    'PhaseViolation',
    2,
  ),
  refused(
    'refuse-record-closed-before-body',
    'After close, an execute with a malformed body: RecordClosed comes first.',
    [close('completed'), attested({ ...FIRST, extra: 1 })],
    'RecordClosed',
    1,
  ),
  refused(
    'refuse-malformed-body-unknown-field',
    'A body with a field the spec does not list: the op cannot be read, MalformedRecord.',
    [execute(att(9)), (h: string) => attested({ ...bodyAt(h, 1), note: 'x' })],
    'MalformedRecord',
    1,
  ),
  refused(
    'refuse-malformed-body-audit-prev-null',
    '"audit_prev": null is malformed (absent is how a body says it has none).',
    [(h: string) => attested({ ...bodyAt(h, 1, null), audit_prev: null }, undefined, att(1))],
    'MalformedRecord',
    0,
  ),
  refused(
    'refuse-malformed-body-exit-code-beyond-i32',
    'exit_code 2^31 is not an i32: MalformedRecord.',
    [(h: string) => attested(bodyAt(h, 1, null, { exit_code: 2147483648 }), undefined, att(1))],
    'MalformedRecord',
    0,
  ),
  refused(
    'refuse-malformed-body-null',
    '"body": null is not a body: MalformedRecord.',
    [{ op: 'execute', attestation: att(1), body: null }],
    'MalformedRecord',
    0,
  ),
];

function sigOf(body: Record<string, unknown>): string {
  return (body.signature as { sig: string }).sig;
}
