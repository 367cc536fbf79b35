// Class C6, tamper-evidence through the wire form: the implementation's own `build` output, edited, must
// fail `verify` with the spec's code and index; and records forged by the reference encoder whose heads
// all recompute but which break exactly one rule.
import type { PatchOpT, VerifyExpectT } from '../vectors/schema.js';
import { att, GRANTS_B, MANIFEST_B, MEMORY, ROOT, ROOT_B, UNIT_B, ZEROS } from './addresses.js';
import { type Case, calls, close, execute, fails, image, RECORD_HEAD, resume, suspend } from './define.js';

const park = image(ROOT, MEMORY);
/** The record the tamper cases edit: E(dispatch c1) · S(image+memory) · R · E(resolve c1). */
const BASE = [
  execute(att(1), calls(['c1'])),
  suspend(park),
  resume(park),
  execute(att(2), calls([], ['c1'])),
];
const C = 'C6' as const;

function tamper(name: string, description: string, patch: PatchOpT[], expect: VerifyExpectT): Case {
  return { kind: 'tamper', class: C, name, description, ops: BASE, patch, expect };
}

function forged(name: string, description: string, ops: unknown[], expect: VerifyExpectT): Case {
  return { kind: 'verify', class: C, name, description, ops, expect };
}

export const C6_TAMPER_CASES: readonly Case[] = [
  tamper('tamper-none-verifies', 'The untouched base record verifies (control case).', [], {
    ok: true,
    idle_uj: '1250000',
    account: 'non_blocking',
    phase: 'active',
  }),
  tamper(
    'tamper-suspended-snapshot-root',
    'The recorded snapshot root of the suspended segment is edited: HeadMismatch at 1.',
    [{ op: 'replace', path: '/segments/1/snapshot/root', value: ROOT_B }],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-resumed-snapshot-root',
    'The resumed segment claims another root: HeadMismatch at 2 (heads are checked before snapshots).',
    [{ op: 'replace', path: '/segments/2/snapshot/root', value: ROOT_B }],
    fails('HeadMismatch', 2),
  ),
  tamper(
    'tamper-both-snapshot-roots',
    'Both parks edited alike, heads left as they were: HeadMismatch at the first, 1.',
    [
      { op: 'replace', path: '/segments/1/snapshot/root', value: ROOT_B },
      { op: 'replace', path: '/segments/2/snapshot/root', value: ROOT_B },
    ],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-manifest',
    'The suspended manifest is edited: HeadMismatch at 1.',
    [{ op: 'replace', path: '/segments/1/manifest', value: MANIFEST_B }],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-idle-energy',
    'idle_uj raised by one microjoule: HeadMismatch at 2.',
    [{ op: 'replace', path: '/segments/2/idle_uj', value: '1250001' }],
    fails('HeadMismatch', 2),
  ),
  tamper(
    'tamper-idle-provenance',
    'estimated relabelled as measured: HeadMismatch at 2.',
    [{ op: 'replace', path: '/segments/2/idle_provenance', value: 'measured' }],
    fails('HeadMismatch', 2),
  ),
  tamper(
    'tamper-attestation',
    'The first interval points at another attestation: HeadMismatch at 0.',
    [{ op: 'replace', path: '/segments/0/attestation', value: att(5) }],
    fails('HeadMismatch', 0),
  ),
  tamper(
    'tamper-account-call-added',
    'A call id added to an account: HeadMismatch at 3.',
    [{ op: 'add', path: '/segments/3/account/resolved/-', value: 'c2' }],
    fails('HeadMismatch', 3),
  ),
  tamper(
    'tamper-account-removed',
    'An account removed (accounted and unaccounted hash differently): HeadMismatch at 0.',
    [{ op: 'remove', path: '/segments/0/account' }],
    fails('HeadMismatch', 0),
  ),
  tamper(
    'tamper-reorder-segments',
    'Segments 1 and 2 swapped: HeadMismatch at 1.',
    [{ op: 'move', from: '/segments/2', path: '/segments/1' }],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-drop-middle-segment',
    'The suspended segment dropped: HeadMismatch at 1.',
    [{ op: 'remove', path: '/segments/1' }],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-drop-last-segment',
    'The last segment dropped: every head recomputes, the record head does not match: HeadMismatch, no index.',
    [{ op: 'remove', path: '/segments/3' }],
    fails('HeadMismatch', null),
  ),
  tamper(
    'tamper-final-head',
    "The record's head field changed: HeadMismatch, no index.",
    [{ op: 'replace', path: '/head', value: ZEROS }],
    fails('HeadMismatch', null),
  ),
  tamper(
    'tamper-segment-head',
    "A segment's recorded head changed: HeadMismatch at that segment.",
    [{ op: 'replace', path: '/segments/1/head', value: ZEROS }],
    fails('HeadMismatch', 1),
  ),
  tamper(
    'tamper-unit-id',
    'Spliced onto another unit: the genesis differs, HeadMismatch at 0.',
    [{ op: 'replace', path: '/unit_id', value: UNIT_B }],
    fails('HeadMismatch', 0),
  ),
  tamper(
    'tamper-grants-id',
    'Spliced onto another grant set: HeadMismatch at 0.',
    [{ op: 'replace', path: '/grants_id', value: GRANTS_B }],
    fails('HeadMismatch', 0),
  ),
  {
    kind: 'tamper',
    class: C,
    name: 'verify-right-expect-head',
    description: '--expect-head with the record head: verifies.',
    ops: BASE,
    patch: [],
    expect_head: RECORD_HEAD,
    expect: { ok: true, length: 4 },
  },
  {
    kind: 'tamper',
    class: C,
    name: 'verify-wrong-expect-head',
    description: '--expect-head with another head: HeadMismatch, no index.',
    ops: BASE,
    patch: [],
    expect_head: ZEROS,
    expect: fails('HeadMismatch', null),
  },
  tamper(
    'tamper-unknown-kind',
    'A segment of an unknown kind: MalformedRecord at 1.',
    [{ op: 'replace', path: '/segments/1/kind', value: 'paused' }],
    fails('MalformedRecord', 1),
  ),
  tamper(
    'tamper-bad-hex',
    'An attestation that is not hex: MalformedRecord at 0.',
    [{ op: 'replace', path: '/segments/0/attestation', value: 'zz'.repeat(32) }],
    fails('MalformedRecord', 0),
  ),
  tamper(
    'tamper-short-address',
    'A manifest one byte short: MalformedRecord at 1.',
    [{ op: 'replace', path: '/segments/1/manifest', value: '44'.repeat(31) }],
    fails('MalformedRecord', 1),
  ),
  tamper(
    'tamper-missing-manifest',
    'A suspended segment without its manifest: MalformedRecord at 1.',
    [{ op: 'remove', path: '/segments/1/manifest' }],
    fails('MalformedRecord', 1),
  ),
  tamper(
    'tamper-missing-segment-head',
    'A segment without its head: MalformedRecord at 2.',
    [{ op: 'remove', path: '/segments/2/head' }],
    fails('MalformedRecord', 2),
  ),
  tamper(
    'tamper-missing-record-head',
    'The record without its head field: MalformedRecord, no segment to blame.',
    [{ op: 'remove', path: '/head' }],
    fails('MalformedRecord', null),
  ),
  tamper(
    'tamper-unknown-provenance',
    'idle_provenance outside measured|estimated: MalformedRecord at 2.',
    [{ op: 'replace', path: '/segments/2/idle_provenance', value: 'guessed' }],
    fails('MalformedRecord', 2),
  ),
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-append-after-close',
    description: 'A segment appended after closed (copied from the record): RecordClosed at 2.',
    ops: [execute(att(1)), close('completed')],
    patch: [{ op: 'add', path: '/segments/-', value: { kind: 'closed', reason: 'completed', head: ZEROS } }],
    expect: fails('RecordClosed', 2),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-malformed-segment-after-close',
    description:
      'A segment of an unknown kind after closed: RecordClosed at 2 (checked before well-formedness).',
    ops: [execute(att(1)), close('completed')],
    patch: [{ op: 'add', path: '/segments/-', value: { kind: 'paused', head: 'zz' } }],
    expect: fails('RecordClosed', 2),
  },
  tamper(
    'tamper-unknown-format',
    'The format field names another layout: MalformedRecord, no segment to blame.',
    [{ op: 'replace', path: '/format', value: 'sandbox.runrecord/2' }],
    fails('MalformedRecord', null),
  ),
  forged(
    'forged-forked-snapshot',
    'Heads recompute, but the resume names a forked root: SnapshotMismatch at 2.',
    [execute(att(1)), suspend(park), resume(image(ROOT_B, MEMORY)), execute(att(2))],
    fails('SnapshotMismatch', 2),
  ),
  forged(
    'forged-manifest-mismatch',
    'Heads recompute, but the resume names another manifest: ManifestMismatch at 2.',
    [execute(att(1)), suspend(park), resume(park, '1250000', MANIFEST_B)],
    fails('ManifestMismatch', 2),
  ),
  forged(
    'forged-execute-while-parked',
    'Heads recompute, but an interval executes while parked: PhaseViolation at 2.',
    [execute(att(1)), suspend(park), execute(att(2))],
    fails('PhaseViolation', 2),
  ),
  forged(
    'forged-resume-at-genesis',
    'Heads recompute, but the record starts with a resume: PhaseViolation at 0.',
    [resume(park)],
    fails('PhaseViolation', 0),
  ),
  forged(
    'forged-segment-after-close',
    'Heads recompute, but an interval follows closed: RecordClosed at 2.',
    [execute(att(1)), close('completed'), execute(att(2))],
    fails('RecordClosed', 2),
  ),
  forged(
    'forged-earliest-segment-blamed',
    'A phase violation at 2 and a forked snapshot at 4: the earliest segment is blamed.',
    [execute(att(1)), suspend(park), execute(att(2)), suspend(park), resume(image(ROOT_B))],
    fails('PhaseViolation', 2),
  ),
  {
    kind: 'verify',
    class: C,
    name: 'forged-head-checked-before-phase',
    description: 'An interval executes while parked and its head is also wrong: HeadMismatch comes first.',
    ops: [execute(att(1)), suspend(park), execute(att(2))],
    patch: [{ op: 'replace', path: '/segments/2/head', value: ZEROS }],
    expect: fails('HeadMismatch', 2),
  },
];
