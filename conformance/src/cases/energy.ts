// ENERGY: idle energy sums across resumes (exact, as a decimal string, past 2^53 and past u64),
// zero idle refused on build and on verify, a single idle_uj beyond u64 refused.
import { att, MANIFEST_B, ROOT, ROOT_B } from './addresses.js';
import { type Case, execute, fails, image, resume, suspend, transcript } from './define.js';

const C = 'ENERGY' as const;
const park = image(ROOT);
const U64_MAX = '18446744073709551615';

/** A run parked once per idle figure, each park resumed with it. */
function parks(...idles: string[]): unknown[] {
  return [
    execute(att(1)),
    ...idles.flatMap((idle, i) => [suspend(park), resume(park, idle), execute(att(i + 2))]),
  ];
}

function sums(name: string, idle_uj: string, description: string, ops: readonly unknown[]): Case {
  return { kind: 'build', class: C, name, description, ops, verify: { idle_uj } };
}

export const ENERGY_CASES: readonly Case[] = [
  sums(
    'idle-sums-three-resumes',
    '1254017',
    'Σ idle_uj over three resumes: 1250000 + 4000 + 17.',
    parks('1250000', '4000', '17'),
  ),
  sums(
    'idle-zero-before-any-resume',
    '0',
    'A parked run that has not resumed has drawn nothing on record yet.',
    [execute(att(1)), suspend(park)],
  ),
  sums(
    'idle-counted-when-closed-while-parked',
    '5',
    'Only resumed segments count; the last park was abandoned.',
    [...parks('5'), suspend(park), { op: 'close', reason: 'abandoned' }],
  ),
  sums(
    'idle-single-above-2-53',
    '9007199254740993',
    'One idle_uj of 2^53 + 1, printed exactly.',
    parks('9007199254740993'),
  ),
  sums(
    'idle-sum-crosses-2-53',
    '9007199254740993',
    'Σ of 2^53 − 1 and 2: exact (a JS number would print 9007199254740992).',
    parks('9007199254740991', '2'),
  ),
  sums('idle-u64-max', U64_MAX, 'One idle_uj of u64 max.', parks(U64_MAX)),
  sums(
    'idle-sum-beyond-u64',
    '36893488147419103230',
    'Σ of two u64-max figures, printed exactly (the sum is not a u64).',
    parks(U64_MAX, U64_MAX),
  ),
  sums('idle-transcript-parks-sum', '300', 'Transcript parks accumulate like image parks.', [
    execute(att(1)),
    suspend(transcript()),
    resume(transcript(), '100'),
    execute(att(2)),
    suspend(transcript()),
    resume(transcript(), '200'),
  ]),
  {
    kind: 'build',
    class: C,
    name: 'refuse-zero-idle-image-park',
    description: 'A resume recording idle_uj 0: ZeroIdleEnergy, record unchanged.',
    ops: [execute(att(1)), suspend(park), resume(park, '0')],
    refuse: { error: 'ZeroIdleEnergy', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-zero-idle-transcript-park',
    description: 'A transcript park draws power too: idle_uj 0 is ZeroIdleEnergy.',
    ops: [execute(att(1)), suspend(transcript()), resume(transcript(), '0', undefined, 'measured')],
    refuse: { error: 'ZeroIdleEnergy', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-zero-idle-after-earlier-parks',
    description: 'The second resume records 0: refused at 5 with the five segments before it intact.',
    ops: [...parks('5'), suspend(park), resume(park, '0')],
    refuse: { error: 'ZeroIdleEnergy', index: 5 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-manifest-before-zero-idle',
    description: 'Wrong manifest and zero idle: ManifestMismatch comes first.',
    ops: [execute(att(1)), suspend(park), resume(park, '0', MANIFEST_B)],
    refuse: { error: 'ManifestMismatch', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-snapshot-before-zero-idle',
    description: 'Forked snapshot and zero idle: SnapshotMismatch comes first.',
    ops: [execute(att(1)), suspend(park), resume(image(ROOT_B), '0')],
    refuse: { error: 'SnapshotMismatch', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-idle-beyond-u64-on-build',
    description: 'idle_uj of 2^64 cannot be encoded as u64: MalformedRecord, record unchanged.',
    ops: [execute(att(1)), suspend(park), resume(park, '18446744073709551616')],
    refuse: { error: 'MalformedRecord', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-idle-negative-on-build',
    description: 'idle_uj "-5" is not a u64 decimal: MalformedRecord.',
    ops: [execute(att(1)), suspend(park), resume(park, '-5')],
    refuse: { error: 'MalformedRecord', index: 2 },
  },
  {
    kind: 'verify',
    class: C,
    name: 'forged-zero-idle',
    description: 'Heads recompute, but a resume records idle_uj 0: ZeroIdleEnergy at 2.',
    ops: [execute(att(1)), suspend(park), resume(park, '0'), execute(att(2))],
    expect: fails('ZeroIdleEnergy', 2),
  },
  {
    kind: 'verify',
    class: C,
    name: 'forged-zero-idle-transcript',
    description: 'Heads recompute, but a transcript resume records idle_uj 0: ZeroIdleEnergy at 2.',
    ops: [execute(att(1)), suspend(transcript()), resume(transcript(), '0')],
    expect: fails('ZeroIdleEnergy', 2),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-idle-zeroed',
    description: 'idle_uj edited to 0 without recomputing heads: HeadMismatch at 2 (heads come first).',
    ops: parks('1250000'),
    patch: [{ op: 'replace', path: '/segments/2/idle_uj', value: '0' }],
    expect: fails('HeadMismatch', 2),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-idle-beyond-u64',
    description: 'idle_uj edited to 2^64: not a u64, MalformedRecord at 2.',
    ops: parks('1250000'),
    patch: [{ op: 'replace', path: '/segments/2/idle_uj', value: '18446744073709551616' }],
    expect: fails('MalformedRecord', 2),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-idle-as-json-number',
    description: 'idle_uj as a JSON number instead of a decimal string: MalformedRecord at 2.',
    ops: parks('1250000'),
    patch: [{ op: 'replace', path: '/segments/2/idle_uj', value: 1250000 }],
    expect: fails('MalformedRecord', 2),
  },
];
