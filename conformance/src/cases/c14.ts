// Class C14: the two park forms. Both chain and verify; the three malformed references are refused with
// no segment left behind; image vs transcript over the same inner address is a SnapshotMismatch; and the
// image form's bytes are pinned against a hand-written layout.
import { att, MEMORY, MEMORY_B, ROOT, TRANSCRIPT } from './addresses.js';
import { type Case, execute, fails, image, resume, suspend, transcript } from './define.js';

const C = 'C14' as const;
const R = '11'.repeat(32); // ROOT
const M = '22'.repeat(32); // MEMORY
const T = '33'.repeat(32); // TRANSCRIPT
const F = '44'.repeat(32); // MANIFEST

const MALFORMED: ReadonlyArray<{ form: string; snapshot: unknown; why: string }> = [
  { form: 'neither', snapshot: {}, why: 'names neither form' },
  { form: 'memory-alone', snapshot: { memory: MEMORY }, why: 'a memory image alone names neither form' },
  { form: 'both', snapshot: { root: ROOT, transcript: TRANSCRIPT }, why: 'names both forms' },
  {
    form: 'transcript-with-memory',
    snapshot: { transcript: TRANSCRIPT, memory: MEMORY },
    why: 'a transcript beside a memory image',
  },
  {
    form: 'all-three',
    snapshot: { root: ROOT, memory: MEMORY, transcript: TRANSCRIPT },
    why: 'both forms and a memory image',
  },
];

const refusedOnSuspend: Case[] = MALFORMED.map(({ form, snapshot, why }) => ({
  kind: 'build',
  class: C,
  name: `refuse-malformed-${form}-on-suspend`,
  description: `A suspend whose reference ${why}: MalformedSnapshot, record unchanged (length 1).`,
  ops: [execute(att(1)), suspend(snapshot)],
  refuse: { error: 'MalformedSnapshot', index: 1 },
}));

const refusedOnResume: Case[] = MALFORMED.slice(0, 4).map(({ form, snapshot, why }) => ({
  kind: 'build',
  class: C,
  name: `refuse-malformed-${form}-on-resume`,
  description: `A resume whose reference ${why}: MalformedSnapshot (not SnapshotMismatch), record unchanged.`,
  ops: [execute(att(1)), suspend(image(ROOT, MEMORY)), resume(snapshot)],
  refuse: { error: 'MalformedSnapshot', index: 2 },
}));

export const C14_CASES: readonly Case[] = [
  {
    kind: 'build',
    class: C,
    name: 'park-image-with-memory-pinned',
    description: 'An image park with a memory image; every segment pinned against its hand-written layout.',
    ops: [execute(att(1)), suspend(image(ROOT, MEMORY)), resume(image(ROOT, MEMORY)), execute(att(2))],
    verify: { idle_uj: '1250000', phase: 'active' },
    pinned: [
      { index: 0, layout: 'executed: 01 ‖ attestation', segment_hex: `01 ${att(1)}` },
      {
        index: 1,
        layout: 'suspended image+memory: 02 ‖ 01 ‖ root ‖ 01 ‖ memory ‖ manifest',
        segment_hex: `02 01 ${R} 01 ${M} ${F}`,
      },
      {
        index: 2,
        layout: 'resumed image+memory: 03 ‖ 01 ‖ root ‖ 01 ‖ memory ‖ manifest ‖ u64 1250000 ‖ 02 estimated',
        segment_hex: `03 01 ${R} 01 ${M} ${F} 00000000 001312d0 02`,
      },
    ],
  },
  {
    kind: 'build',
    class: C,
    name: 'park-image-without-memory-pinned',
    description: 'An image park with no memory image (flag byte 00), measured idle energy.',
    ops: [
      execute(att(1)),
      suspend(image(ROOT)),
      resume(image(ROOT), '4000', undefined, 'measured'),
      execute(att(2)),
    ],
    verify: { idle_uj: '4000', phase: 'active' },
    pinned: [
      {
        index: 1,
        layout: 'suspended image: 02 ‖ 01 ‖ root ‖ 00 ‖ manifest',
        segment_hex: `02 01 ${R} 00 ${F}`,
      },
      {
        index: 2,
        layout: 'resumed image: 03 ‖ 01 ‖ root ‖ 00 ‖ manifest ‖ u64 4000 ‖ 01 measured',
        segment_hex: `03 01 ${R} 00 ${F} 00000000 00000fa0 01`,
      },
    ],
  },
  {
    kind: 'build',
    class: C,
    name: 'park-transcript-pinned',
    description: 'A transcript park chains, verifies and accumulates idle energy like any other.',
    ops: [execute(att(1)), suspend(transcript()), resume(transcript(), '17'), execute(att(2))],
    verify: { idle_uj: '17', phase: 'active' },
    pinned: [
      {
        index: 1,
        layout: 'suspended transcript: 02 ‖ 02 ‖ transcript ‖ manifest',
        segment_hex: `02 02 ${T} ${F}`,
      },
      {
        index: 2,
        layout: 'resumed transcript: 03 ‖ 02 ‖ transcript ‖ manifest ‖ u64 17 ‖ 02 estimated',
        segment_hex: `03 02 ${T} ${F} 00000000 00000011 02`,
      },
    ],
  },
  {
    kind: 'build',
    class: C,
    name: 'park-transcript-over-root-address',
    description:
      'A transcript park over the address used as an image root elsewhere: its own bytes (02 02 …).',
    ops: [execute(att(1)), suspend(transcript(ROOT))],
    verify: { phase: 'parked' },
    pinned: [
      {
        index: 1,
        layout: 'suspended transcript: 02 ‖ 02 ‖ address ‖ manifest',
        segment_hex: `02 02 ${R} ${F}`,
      },
    ],
  },
  {
    kind: 'build',
    class: C,
    name: 'park-transcript-then-image',
    description: 'A run parks once as a transcript and once as an image; idle energy sums over both.',
    ops: [
      execute(att(1)),
      suspend(transcript()),
      resume(transcript(), '5'),
      execute(att(2)),
      suspend(image(ROOT, MEMORY)),
      resume(image(ROOT, MEMORY), '7'),
      execute(att(3)),
    ],
    verify: { idle_uj: '12', phase: 'active' },
  },
  ...refusedOnSuspend,
  ...refusedOnResume,
  {
    kind: 'build',
    class: C,
    name: 'refuse-image-for-transcript-park',
    description:
      'Parked as transcript(X), resumed as image(X) over the same inner address: SnapshotMismatch.',
    ops: [execute(att(1)), suspend(transcript(ROOT)), resume(image(ROOT))],
    refuse: { error: 'SnapshotMismatch', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-transcript-for-image-park',
    description: 'Parked as image(X), resumed as transcript(X): SnapshotMismatch.',
    ops: [execute(att(1)), suspend(image(ROOT)), resume(transcript(ROOT))],
    refuse: { error: 'SnapshotMismatch', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-image-memory-dropped',
    description: 'Parked with a memory image, resumed without it: SnapshotMismatch.',
    ops: [execute(att(1)), suspend(image(ROOT, MEMORY)), resume(image(ROOT))],
    refuse: { error: 'SnapshotMismatch', index: 2 },
  },
  {
    kind: 'build',
    class: C,
    name: 'refuse-image-memory-added',
    description: 'Parked without a memory image, resumed with one: SnapshotMismatch.',
    ops: [execute(att(1)), suspend(image(ROOT)), resume(image(ROOT, MEMORY_B))],
    refuse: { error: 'SnapshotMismatch', index: 2 },
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-reference-edited-to-both-forms',
    description: 'A transcript edited into a recorded image reference: MalformedSnapshot at 1, not a hash.',
    ops: [execute(att(1)), suspend(image(ROOT)), resume(image(ROOT))],
    patch: [{ op: 'add', path: '/segments/1/snapshot/transcript', value: TRANSCRIPT }],
    expect: fails('MalformedSnapshot', 1),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-reference-root-removed',
    description:
      'The root removed from an image reference, leaving its memory alone: MalformedSnapshot at 1.',
    ops: [execute(att(1)), suspend(image(ROOT, MEMORY)), resume(image(ROOT, MEMORY))],
    patch: [{ op: 'remove', path: '/segments/1/snapshot/root' }],
    expect: fails('MalformedSnapshot', 1),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-reference-emptied',
    description: 'A resumed reference emptied: MalformedSnapshot at 2.',
    ops: [execute(att(1)), suspend(transcript()), resume(transcript())],
    patch: [{ op: 'replace', path: '/segments/2/snapshot', value: {} }],
    expect: fails('MalformedSnapshot', 2),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-transcript-given-memory',
    description: 'A memory image edited into a transcript reference: MalformedSnapshot at 1.',
    ops: [execute(att(1)), suspend(transcript()), resume(transcript())],
    patch: [{ op: 'add', path: '/segments/1/snapshot/memory', value: MEMORY }],
    expect: fails('MalformedSnapshot', 1),
  },
  {
    kind: 'tamper',
    class: C,
    name: 'tamper-resumed-form-swapped',
    description:
      'A resumed image reference rewritten as a transcript over the same address: HeadMismatch at 2.',
    ops: [execute(att(1)), suspend(image(ROOT)), resume(image(ROOT))],
    patch: [{ op: 'replace', path: '/segments/2/snapshot', value: { transcript: ROOT } }],
    expect: fails('HeadMismatch', 2),
  },
  {
    kind: 'verify',
    class: C,
    name: 'forged-image-vs-transcript-same-address',
    description: 'Heads recompute; parked as image(X), resumed as transcript(X): SnapshotMismatch at 2.',
    ops: [execute(att(1)), suspend(image(ROOT)), resume(transcript(ROOT))],
    expect: fails('SnapshotMismatch', 2),
  },
];
