// LOG: the head log's command-line contract (spec/witnessed-heads.md). Roots of pinned trees, audit paths
// and consistency proofs that verify, every tampered element that must not, and every "Precise readings"
// clause — including MalformedProof winning over a hash mismatch.
import { flipHex, type LogCase, type LogError, type LogFixture } from './log-define.js';

type Input = (f: LogFixture) => unknown;

const base = (name: string, command: string, description: string) =>
  ({ kind: 'log', class: 'LOG', name, command, description }) as const;

function root(name: string, n: number, description: string, pinned?: LogCase['pinned']): LogCase {
  return {
    ...base(name, 'log-root', description),
    input: (f) => ({ leaves: f.leaves(n) }),
    expect: 'ok',
    treeSize: n,
    ...(pinned ? { pinned } : {}),
  };
}

const rootFails = (name: string, description: string, input: Input | { stdin: string }): LogCase => ({
  ...base(name, 'log-root', description),
  input,
  expect: 'MalformedProof',
});

const incl = (name: string, description: string, input: Input, expect: 'ok' | LogError = 'ok'): LogCase => ({
  ...base(name, 'log-verify-inclusion', description),
  input,
  expect,
});

const cons = (
  name: string,
  description: string,
  input: Input | { stdin: string },
  expect: 'ok' | LogError = 'ok',
): LogCase => ({
  ...base(name, 'log-verify-consistency', description),
  input,
  expect,
});

/** An object with one field replaced (or removed, for `undefined`). */
function edit(o: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> {
  const out = { ...o };
  if (value === undefined) delete out[field];
  else out[field] = value;
  return out;
}

const EMPTY_BLAKE3 = 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262';

const ROOTS: LogCase[] = [
  root('root-empty', 0, 'The empty tree: tree_size "0" and H("") (BLAKE3 of the empty string).', () => [
    { layout: '(empty)', preimage_hex: '' },
  ]),
  root('root-one-leaf', 1, 'One leaf: the root is its leaf hash H(0x00 ‖ leaf).', (f) => [
    { layout: '00 ‖ leaf 0', preimage_hex: `00 ${f.leaf(0)}` },
  ]),
  root('root-two-leaves', 2, 'H(0x01 ‖ H(0x00 ‖ leaf 0) ‖ H(0x00 ‖ leaf 1)).', (f) => [
    { layout: '00 ‖ leaf 0', preimage_hex: `00 ${f.leaf(0)}` },
    { layout: '00 ‖ leaf 1', preimage_hex: `00 ${f.leaf(1)}` },
    { layout: '01 ‖ h(leaf 0) ‖ h(leaf 1)', preimage_hex: `01 ${f.leafHash(0)} ${f.leafHash(1)}` },
  ]),
  root(
    'root-three-leaves',
    3,
    'Split at the largest power of two below n: H(01 ‖ MTH(D[0:2]) ‖ h(leaf 2)).',
    (f) => [
      { layout: '01 ‖ h(leaf 0) ‖ h(leaf 1)', preimage_hex: `01 ${f.leafHash(0)} ${f.leafHash(1)}` },
      { layout: '01 ‖ MTH(D[0:2]) ‖ h(leaf 2)', preimage_hex: `01 ${f.node(0, 2)} ${f.leafHash(2)}` },
    ],
  ),
  root(
    'root-seven-leaves',
    7,
    "RFC 9162 §2.1.5's example shape: H(01 ‖ k ‖ l), k = MTH(D[0:4]), l = MTH(D[4:7]).",
    (f) => [
      { layout: '01 ‖ h(leaf 4) ‖ h(leaf 5)', preimage_hex: `01 ${f.leafHash(4)} ${f.leafHash(5)}` },
      { layout: '01 ‖ MTH(D[4:6]) ‖ h(leaf 6)', preimage_hex: `01 ${f.node(4, 6)} ${f.leafHash(6)}` },
      { layout: '01 ‖ MTH(D[0:4]) ‖ MTH(D[4:7])', preimage_hex: `01 ${f.node(0, 4)} ${f.node(4, 7)}` },
    ],
  ),
  root('root-eight-leaves', 8, 'A power of two: a perfect tree, H(01 ‖ MTH(D[0:4]) ‖ MTH(D[4:8])).', (f) => [
    { layout: '01 ‖ MTH(D[0:4]) ‖ MTH(D[4:8])', preimage_hex: `01 ${f.node(0, 4)} ${f.node(4, 8)}` },
  ]),
  root('root-sixty-nine-leaves', 69, '69 = 64 + 4 + 1: three levels of right edge.', (f) => [
    { layout: '01 ‖ MTH(D[64:68]) ‖ h(leaf 68)', preimage_hex: `01 ${f.node(64, 68)} ${f.leafHash(68)}` },
    { layout: '01 ‖ MTH(D[0:64]) ‖ MTH(D[64:69])', preimage_hex: `01 ${f.node(0, 64)} ${f.node(64, 69)}` },
  ]),
  rootFails('root-not-json', 'Input that is not JSON: MalformedProof, exit 1.', { stdin: '{"leaves": [' }),
  rootFails('root-missing-leaves', 'No "leaves" field.', () => ({})),
  rootFails('root-unknown-field', 'An unknown field beside "leaves".', (f) => ({
    leaves: f.leaves(2),
    size: 2,
  })),
  rootFails('root-leaves-not-array', '"leaves" is a string, not a list.', (f) => ({ leaves: f.leaf(0) })),
  rootFails('root-leaf-is-a-hash', 'A 32-byte leaf hash in place of the leaf: a leaf is 162 bytes.', (f) => ({
    leaves: [f.leaf(0), f.leafHash(1)],
  })),
  rootFails('root-leaf-wrong-tag', '162 bytes that do not start with "everdict.headlog/1".', (f) => ({
    leaves: [`00${f.leaf(0).slice(2)}`],
  })),
  rootFails('root-leaf-uppercase-hex', 'Hex is lowercase.', (f) => ({ leaves: [f.leaf(0).toUpperCase()] })),
  rootFails('root-leaf-odd-hex', 'Hex is even-length.', (f) => ({ leaves: [`${f.leaf(0)}0`] })),
];

const I = (f: LogFixture, i: number, n: number) => f.inclusion(i, n);

const INCLUSION: LogCase[] = [
  incl('inclusion-single-leaf', 'Leaf 0 of a tree of one: the empty path.', (f) => I(f, 0, 1)),
  incl('inclusion-rfc-d0', 'RFC example: the path of d0 in 7 leaves is [b, h, l].', (f) => I(f, 0, 7)),
  incl('inclusion-rfc-d3', 'RFC example: the path of d3 in 7 leaves is [c, g, l].', (f) => I(f, 3, 7)),
  incl('inclusion-rfc-d4', 'RFC example: the path of d4 in 7 leaves is [f, j, k].', (f) => I(f, 4, 7)),
  incl('inclusion-rfc-d6', 'RFC example: the path of d6 in 7 leaves is [i, k] (two elements).', (f) =>
    I(f, 6, 7),
  ),
  incl('inclusion-last-of-power-of-two', 'The last leaf of a perfect tree of 64.', (f) => I(f, 63, 64)),
  incl('inclusion-right-edge', 'Leaf 68 of 69: the path climbs a ragged right edge.', (f) => I(f, 68, 69)),
  incl('inclusion-middle-of-69', 'Leaf 37 of 69.', (f) => I(f, 37, 69)),
  incl(
    'inclusion-size-not-bound-by-path',
    'As in RFC 9162, a path does not pin the size: the path of leaf 0 of 5 also verifies as size 6 with the same root.',
    (f) => edit(I(f, 0, 5), 'tree_size', 6),
  ),
  incl(
    'inclusion-wrong-root',
    'A well-formed path to another root: InclusionFailed.',
    (f) => edit(I(f, 4, 7), 'root', f.root(6)),
    'InclusionFailed',
  ),
  incl(
    'inclusion-tampered-first-element',
    "The leaf's sibling changed.",
    (f) => {
      const o = I(f, 37, 69);
      return edit(
        o,
        'path',
        (o.path as string[]).map((p, k) => (k === 0 ? flipHex(p) : p)),
      );
    },
    'InclusionFailed',
  ),
  incl(
    'inclusion-tampered-last-element',
    'The top sibling changed.',
    (f) => {
      const o = I(f, 37, 69);
      return edit(
        o,
        'path',
        (o.path as string[]).map((p, k, a) => (k === a.length - 1 ? flipHex(p) : p)),
      );
    },
    'InclusionFailed',
  ),
  incl(
    'inclusion-swapped-elements',
    'Two path elements in the wrong order.',
    (f) => {
      const o = I(f, 3, 7);
      const [a, b, ...rest] = o.path as string[];
      return edit(o, 'path', [b, a, ...rest]);
    },
    'InclusionFailed',
  ),
  incl(
    'inclusion-other-leaf',
    "Leaf 5's bytes with leaf 4's index and path.",
    (f) => edit(I(f, 4, 7), 'leaf', f.leaf(5)),
    'InclusionFailed',
  ),
  incl(
    'inclusion-other-index-same-length',
    "Leaf 4's path given for index 5 (same path length).",
    (f) => edit(I(f, 4, 7), 'index', 5),
    'InclusionFailed',
  ),
  incl(
    'inclusion-index-equals-size',
    "index = tree_size, with the last leaf's path: MalformedProof (an implementation that hashes on would accept it).",
    (f) => edit(I(f, 4, 5), 'index', 5),
    'MalformedProof',
  ),
  incl(
    'inclusion-index-beyond-size',
    'index > tree_size.',
    (f) => edit(I(f, 4, 7), 'index', 9),
    'MalformedProof',
  ),
  incl(
    'inclusion-empty-tree',
    'A tree of size 0 includes nothing: index 0 is already ≥ tree_size.',
    (f) => ({
      ...I(f, 0, 1),
      tree_size: 0,
      root: EMPTY_BLAKE3,
    }),
    'MalformedProof',
  ),
  incl(
    'inclusion-path-missing-element',
    'The top element dropped.',
    (f) => {
      const o = I(f, 37, 69);
      return edit(o, 'path', (o.path as string[]).slice(0, -1));
    },
    'MalformedProof',
  ),
  incl(
    'inclusion-path-extra-element',
    'The root appended to a correct path.',
    (f) => {
      const o = I(f, 37, 69);
      return edit(o, 'path', [...(o.path as string[]), o.root]);
    },
    'MalformedProof',
  ),
  incl(
    'inclusion-single-leaf-with-element',
    'A tree of one has an empty path; one element is too many.',
    (f) => edit(I(f, 0, 1), 'path', [f.leafHash(0)]),
    'MalformedProof',
  ),
  incl(
    'inclusion-malformed-wins-over-mismatch',
    'A short path to a wrong root: the length is decided without hashing, so MalformedProof, not InclusionFailed.',
    (f) => {
      const o = I(f, 4, 7);
      return { ...o, root: f.root(6), path: (o.path as string[]).slice(1) };
    },
    'MalformedProof',
  ),
  incl(
    'inclusion-leaf-is-its-hash',
    'The leaf hash given as the leaf: a leaf is its 162 bytes.',
    (f) => edit(I(f, 4, 7), 'leaf', f.leafHash(4)),
    'MalformedProof',
  ),
  incl(
    'inclusion-leaf-wrong-tag',
    "162 bytes without the leaf's tag.",
    (f) => edit(I(f, 4, 7), 'leaf', `ff${f.leaf(4).slice(2)}`),
    'MalformedProof',
  ),
  incl(
    'inclusion-index-as-string',
    'Indexes are JSON numbers.',
    (f) => edit(I(f, 4, 7), 'index', '4'),
    'MalformedProof',
  ),
  incl(
    'inclusion-size-as-string',
    'Sizes are JSON numbers.',
    (f) => edit(I(f, 4, 7), 'tree_size', '7'),
    'MalformedProof',
  ),
  incl(
    'inclusion-negative-index',
    'Indexes are non-negative.',
    (f) => edit(I(f, 4, 7), 'index', -1),
    'MalformedProof',
  ),
  incl(
    'inclusion-fractional-size',
    'Sizes are integers.',
    (f) => edit(I(f, 4, 7), 'tree_size', 7.5),
    'MalformedProof',
  ),
  incl(
    'inclusion-root-0x',
    'Hex has no 0x prefix.',
    (f) => edit(I(f, 4, 7), 'root', `0x${f.root(7)}`),
    'MalformedProof',
  ),
  incl(
    'inclusion-root-uppercase',
    'Hex is lowercase.',
    (f) => edit(I(f, 4, 7), 'root', f.root(7).toUpperCase()),
    'MalformedProof',
  ),
  incl(
    'inclusion-element-31-bytes',
    'Every hash is exactly 32 bytes.',
    (f) => {
      const o = I(f, 4, 7);
      return edit(
        o,
        'path',
        (o.path as string[]).map((p, k) => (k === 1 ? p.slice(2) : p)),
      );
    },
    'MalformedProof',
  ),
  incl(
    'inclusion-unknown-field',
    'An unknown field.',
    (f) => ({ ...I(f, 4, 7), note: 'x' }),
    'MalformedProof',
  ),
  incl(
    'inclusion-missing-path',
    'No "path" field.',
    (f) => edit(I(f, 4, 7), 'path', undefined),
    'MalformedProof',
  ),
  incl(
    'inclusion-path-not-array',
    '"path" is not a list.',
    (f) => edit(I(f, 4, 7), 'path', f.root(7)),
    'MalformedProof',
  ),
];

const C = (f: LogFixture, m: number, n: number) => f.consistency(m, n);

const CONSISTENCY: LogCase[] = [
  cons('consistency-rfc-3-to-7', 'RFC example: PROOF(3, D[7]) = [c, d, g, l].', (f) => C(f, 3, 7)),
  cons(
    'consistency-rfc-4-to-7',
    'RFC example: PROOF(4, D[7]) = [l]: a power-of-two old tree is not repeated.',
    (f) => C(f, 4, 7),
  ),
  cons('consistency-rfc-6-to-7', 'RFC example: PROOF(6, D[7]) = [i, j, k].', (f) => C(f, 6, 7)),
  cons('consistency-1-to-2', 'The smallest growth: [h(leaf 1)].', (f) => C(f, 1, 2)),
  cons('consistency-1-to-69', 'From one leaf (a power of two) to 69.', (f) => C(f, 1, 69)),
  cons('consistency-32-to-64', 'Power of two to power of two: [MTH(D[32:64])].', (f) => C(f, 32, 64)),
  cons('consistency-37-to-69', 'Neither size a power of two.', (f) => C(f, 37, 69)),
  cons('consistency-68-to-69', 'One leaf appended to 68.', (f) => C(f, 68, 69)),
  cons('consistency-equal-sizes', 'old_size = new_size with equal roots and an empty proof.', (f) => ({
    ...C(f, 7, 7),
    proof: [],
  })),
  cons('consistency-from-empty', 'old_size 0: old_root is H("") and the proof is empty.', (f) => C(f, 0, 7)),
  cons('consistency-empty-to-empty', 'Both trees empty.', (f) => C(f, 0, 0)),
  cons(
    'consistency-wrong-new-root',
    'A well-formed proof to another new root: InconsistentLog.',
    (f) => edit(C(f, 3, 7), 'new_root', f.root(6)),
    'InconsistentLog',
  ),
  cons(
    'consistency-wrong-old-root',
    'A well-formed proof from another old root.',
    (f) => edit(C(f, 3, 7), 'old_root', f.root(2)),
    'InconsistentLog',
  ),
  cons(
    'consistency-wrong-old-root-power-of-two',
    'The old root of a power-of-two tree is not in the proof, yet it is checked.',
    (f) => edit(C(f, 4, 7), 'old_root', f.root(3)),
    'InconsistentLog',
  ),
  cons(
    'consistency-tampered-first-element',
    'The first proof element changed.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(
        o,
        'proof',
        (o.proof as string[]).map((p, k) => (k === 0 ? flipHex(p) : p)),
      );
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-tampered-last-element',
    'The last proof element changed.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(
        o,
        'proof',
        (o.proof as string[]).map((p, k, a) => (k === a.length - 1 ? flipHex(p) : p)),
      );
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-swapped-elements',
    'Two proof elements in the wrong order.',
    (f) => {
      const o = C(f, 3, 7);
      const [a, b, ...rest] = o.proof as string[];
      return edit(o, 'proof', [b, a, ...rest]);
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-other-old-size',
    "3→7's proof given as 5→7 (same length).",
    (f) => ({ ...C(f, 3, 7), old_size: 5, old_root: f.root(5) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-equal-sizes-different-roots',
    'old_size = new_size: two roots for one size.',
    (f) => ({ ...C(f, 7, 7), old_root: f.root(6) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-from-empty-wrong-root',
    'old_size 0 with an old_root that is not H("").',
    (f) => ({ ...C(f, 0, 7), old_root: f.root(1) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-power-of-two-old-root-repeated',
    "4→7 with the old root prepended ([k, l]): the RFC's proof does not repeat it, so the length is wrong: MalformedProof.",
    (f) => {
      const o = C(f, 4, 7);
      return edit(o, 'proof', [o.old_root, ...(o.proof as string[])]);
    },
    'MalformedProof',
  ),
  cons(
    'consistency-old-above-new',
    'old_size > new_size.',
    (f) => ({ ...C(f, 7, 7), old_size: 8, old_root: f.root(8) }),
    'MalformedProof',
  ),
  cons(
    'consistency-equal-sizes-nonempty-proof',
    'old_size = new_size needs no proof; one element is MalformedProof.',
    (f) => ({ ...C(f, 7, 7), proof: [f.root(7)] }),
    'MalformedProof',
  ),
  cons(
    'consistency-from-empty-nonempty-proof',
    'old_size 0 needs no proof.',
    (f) => ({ ...C(f, 0, 7), proof: [f.root(7)] }),
    'MalformedProof',
  ),
  cons(
    'consistency-missing-element',
    'The last element dropped.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(o, 'proof', (o.proof as string[]).slice(0, -1));
    },
    'MalformedProof',
  ),
  cons(
    'consistency-extra-element',
    'The new root appended.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(o, 'proof', [...(o.proof as string[]), o.new_root]);
    },
    'MalformedProof',
  ),
  cons(
    'consistency-malformed-wins-over-mismatch',
    'A short proof between wrong roots: MalformedProof, not InconsistentLog.',
    (f) => {
      const o = C(f, 3, 7);
      return { ...o, new_root: f.root(6), proof: (o.proof as string[]).slice(1) };
    },
    'MalformedProof',
  ),
  cons(
    'consistency-size-as-string',
    'Sizes are JSON numbers.',
    (f) => edit(C(f, 3, 7), 'old_size', '3'),
    'MalformedProof',
  ),
  cons(
    'consistency-unknown-field',
    'An unknown field.',
    (f) => ({ ...C(f, 3, 7), tree_size: 7 }),
    'MalformedProof',
  ),
  cons(
    'consistency-missing-proof',
    'No "proof" field.',
    (f) => edit(C(f, 3, 7), 'proof', undefined),
    'MalformedProof',
  ),
  cons('consistency-not-json', 'Input that is not JSON.', { stdin: 'old_size=3' }, 'MalformedProof'),
];

export const LOG_CASES: readonly LogCase[] = [
  ...ROOTS,
  ...INCLUSION,
  ...CONSISTENCY,
  {
    ...base(
      'unknown-subcommand',
      'log-frobnicate',
      'A subcommand the contract does not name: exit 2 (usage).',
    ),
    input: { stdin: '{}' },
    expect: 'usage',
  },
];
