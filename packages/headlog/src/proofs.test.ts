// Inclusion and consistency proofs: made from stored nodes (plans), checked against the RFC's recursive
// PATH/PROOF, verified by the RFC's algorithms — exhaustively for small trees, by properties up to 3,000
// leaves, and on sparse trees past 2^32 leaves.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hex, hexes, NaiveTree, naiveLeafHash, naiveNodeHash, testLeaves } from '../test/naive.js';
import { SparseTree } from '../test/sparse-tree.js';
import { leafHash } from './hash.js';
import { MemoryTree } from './memory-tree.js';
import { planConsistencyProof, planInclusionProof, planRoot, runPlan } from './plan.js';
import { consistencyProofLength, inclusionPathLength } from './shape.js';
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from './verify.js';

const N = 3_000;
const leaves = testLeaves(N);
const naive = new NaiveTree(leaves);
const tree = new MemoryTree();
for (const l of leaves) tree.appendLeaf(l);

function checkInclusion(i: number, n: number): void {
  const path = tree.inclusionProof(i, n);
  expect(hexes(path), `PATH(${i}, D[${n}])`).toEqual(hexes(naive.path(i, 0, n)));
  expect(path.length).toBe(inclusionPathLength(i, n));
  verifyInclusion(leafHash(leaves[i]!), i, n, naive.root(n), path);
}

function checkConsistency(m: number, n: number): void {
  const proof = tree.consistencyProof(m, n);
  expect(hexes(proof), `PROOF(${m}, D[${n}])`).toEqual(hexes(naive.proof(m, n)));
  expect(proof.length).toBe(consistencyProofLength(m, n));
  verifyConsistency(m, n, naive.root(m), naive.root(n), proof);
}

describe('exhaustive small trees', () => {
  it('every leaf of every tree up to 64 leaves', () => {
    for (let n = 1; n <= 64; n++) for (let i = 0; i < n; i++) checkInclusion(i, n);
  });

  it('every pair of sizes 0 ≤ m ≤ n ≤ 64', () => {
    for (let n = 0; n <= 64; n++) for (let m = 0; m <= n; m++) checkConsistency(m, n);
  });
});

describe(`random sizes up to ${N}`, () => {
  const sizeAndIndex = fc.integer({ min: 1, max: N }).chain((n) => fc.tuple(fc.nat(n - 1), fc.constant(n)));
  const twoSizes = fc.integer({ min: 0, max: N }).chain((n) => fc.tuple(fc.nat(n), fc.constant(n)));

  it('inclusion proofs equal PATH and verify', () => {
    fc.assert(
      fc.property(sizeAndIndex, ([i, n]) => checkInclusion(i, n)),
      { numRuns: 1_500 },
    );
  });

  it('consistency proofs equal PROOF and verify', () => {
    fc.assert(
      fc.property(twoSizes, ([m, n]) => checkConsistency(m, n)),
      { numRuns: 1_500 },
    );
  });

  it('plans read at most 2·log2(n) + 2 nodes', () => {
    fc.assert(
      fc.property(sizeAndIndex, twoSizes, ([i, n], [m, n2]) => {
        const bound = (s: number) => 2 * Math.ceil(Math.log2(Math.max(s, 2))) + 2;
        expect(planInclusionProof(i, n).nodes.length).toBeLessThanOrEqual(bound(n));
        expect(planConsistencyProof(m, n2).nodes.length).toBeLessThanOrEqual(bound(n2));
        expect(planRoot(n).nodes.length).toBeLessThanOrEqual(Math.log2(n) + 1);
      }),
    );
  });
});

describe('sparse trees past 2^31 and 2^32 leaves (arithmetic stays exact)', () => {
  const base = testLeaves(1, 99)[0]!;
  const bigSize = fc.oneof(
    fc.integer({ min: 2 ** 31 - 3, max: 2 ** 31 + 3 }),
    fc.integer({ min: 2 ** 32 - 3, max: 2 ** 32 + 3 }),
    fc.integer({ min: 2, max: 2 ** 52 }),
  );
  const specials = (indexes: number[]) =>
    new SparseTree(base, new Map(indexes.map((i, k) => [i, testLeaves(1, 1_000 + k + i)[0]!])));

  it('inclusion', () => {
    fc.assert(
      fc.property(bigSize, fc.double({ min: 0, max: 1, noNaN: true }), fc.nat(), (n, f, x) => {
        const i = Math.min(n - 1, Math.floor(f * n));
        const other = x % n;
        const t = specials([i, other, n - 1]);
        const path = runPlan(planInclusionProof(i, n), (ids) => ids.map((id) => t.node(id.level, id.index)));
        expect(hexes(path)).toEqual(hexes(t.path(i, 0, n)));
        verifyInclusion(t.leafHash(i), i, n, t.mth(0, n), path);
      }),
      { numRuns: 150 },
    );
  });

  it('consistency', () => {
    fc.assert(
      fc.property(bigSize, fc.double({ min: 0, max: 1, noNaN: true }), (n, f) => {
        const m = Math.min(n, Math.max(1, Math.floor(f * n)));
        const t = specials([m - 1, m, n - 1, Math.floor(m / 2)]);
        const proof = runPlan(planConsistencyProof(m, n), (ids) =>
          ids.map((id) => t.node(id.level, id.index)),
        );
        expect(hexes(proof)).toEqual(hexes(m === n ? [] : t.subproof(m, 0, n, true)));
        verifyConsistency(m, n, t.mth(0, m), t.mth(0, n), proof);
      }),
      { numRuns: 150 },
    );
  });
});

describe("RFC 9162 §2.1.5's example tree of seven leaves", () => {
  // hash(k, l): k = H(g, h), g = H(a, b), h = H(c, d); l = H(i, j), i = H(e, f), j = d6
  const d = leaves.slice(0, 7);
  const [a, b, c, dd, e, f, j] = d.map(naiveLeafHash) as Uint8Array[] as [
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
  ];
  const g = naiveNodeHash(a, b);
  const h = naiveNodeHash(c, dd);
  const i = naiveNodeHash(e, f);
  const k = naiveNodeHash(g, h);
  const l = naiveNodeHash(i, j);
  const t = new NaiveTree(d);
  const seven = new MemoryTree();
  for (const x of d) seven.appendLeaf(x);

  it('audit paths: d0 [b, h, l], d3 [c, g, l], d4 [f, j, k], d6 [i, k]', () => {
    expect(hexes(seven.inclusionProof(0))).toEqual(hexes([b, h, l]));
    expect(hexes(seven.inclusionProof(3))).toEqual(hexes([c, g, l]));
    expect(hexes(seven.inclusionProof(4))).toEqual(hexes([f, j, k]));
    expect(hexes(seven.inclusionProof(6))).toEqual(hexes([i, k]));
    expect(hex(seven.root())).toBe(hex(naiveNodeHash(k, l)));
  });

  it('consistency: 3→7 [c, d, g, l]; 4→7 [l] (no old root repeated); 6→7 [i, j, k]', () => {
    expect(hexes(seven.consistencyProof(3))).toEqual(hexes([c, dd, g, l]));
    expect(hexes(seven.consistencyProof(4))).toEqual(hexes([l]));
    expect(hexes(seven.consistencyProof(6))).toEqual(hexes([i, j, k]));
  });

  it('a power-of-two old size: the proof with the old root prepended is MalformedProof', () => {
    expect(() => verifyConsistency(4, 7, k, t.root(7), [k, l])).toThrow(/MalformedProof/);
    verifyConsistency(4, 7, k, t.root(7), [l]);
  });
});

describe('the RFC notes', () => {
  it('a path does not pin the size by itself: the path of leaf 0 of 5 leads to the same root as size 6', () => {
    const path = tree.inclusionProof(0, 5);
    expect(inclusionPathLength(0, 6)).toBe(path.length);
    const as5 = rootFromInclusionProof(leafHash(leaves[0]!), 0, 5, path);
    expect(hex(rootFromInclusionProof(leafHash(leaves[0]!), 0, 6, path))).toBe(hex(as5));
  });
});
