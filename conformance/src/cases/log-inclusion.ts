// LOG cases of log-verify-inclusion: audit paths that verify (the RFC's example among them), every tampered
// element that must not, and each "Precise readings" clause.
import { EMPTY_BLAKE3, edit, incl } from './log-builders.js';
import { flipHex, type LogCase, type LogFixture } from './log-define.js';

const I = (f: LogFixture, i: number, n: number) => f.inclusion(i, n);

export const LOG_INCLUSION_CASES: LogCase[] = [
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
