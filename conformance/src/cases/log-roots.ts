// LOG cases of log-root: pinned trees (hand-written preimages) and inputs that are not the contract's object.
import { root, rootFails } from './log-builders.js';
import type { LogCase } from './log-define.js';

export const LOG_ROOT_CASES: LogCase[] = [
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
