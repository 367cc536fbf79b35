// Every proof of every tree of 0…300 leaves: every index of every size, every pair of sizes — made from
// stored nodes, equal to the RFC's recursive PATH / PROOF, verified — and, by properties over the same
// range, every wrong proof refused with the spec's code: a changed element, a proof of another index or
// size, a missing / extra / repeated element, an index ≥ size (size 0 included), old > new.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hexes, NaiveTree, testLeaves } from '../test/naive.js';
import { HeadLogError } from './errors.js';
import { leafHash } from './hash.js';
import { MemoryTree } from './memory-tree.js';
import { exactLog2 } from './shape.js';
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from './verify.js';

const N = 300;
const leaves = testLeaves(N + 1, 300);
const naive = new NaiveTree(leaves);
const tree = new MemoryTree();
for (const l of leaves.slice(0, N)) tree.appendLeaf(l);
const leafHashes = leaves.map(leafHash);
const roots = Array.from({ length: N + 1 }, (_, n) => naive.root(n));

function codeOf(f: () => void): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    if (e instanceof HeadLogError) return e.code;
    throw e;
  }
}

const flip = (h: Uint8Array, bit: number) => {
  const c = h.slice();
  c[bit >> 3]! ^= 1 << (bit & 7);
  return c;
};

const sameHashes = (a: readonly Uint8Array[], b: readonly Uint8Array[]) =>
  a.length === b.length && a.every((h, k) => Buffer.from(h).equals(Buffer.from(b[k]!)));

describe(`every tree of 0…${N} leaves`, () => {
  it('every index of every size: the audit path is PATH and verifies; index ≥ size is MalformedProof', () => {
    for (let n = 0; n <= N; n++) {
      for (let i = 0; i < n; i++) {
        const path = tree.inclusionProof(i, n);
        const want = naive.path(i, 0, n);
        if (!sameHashes(path, want)) expect(hexes(path), `PATH(${i}, D[${n}])`).toEqual(hexes(want));
        verifyInclusion(leafHashes[i]!, i, n, roots[n]!, path);
        if (!sameHashes([rootFromInclusionProof(leafHashes[i]!, i, n, path)], [roots[n]!]))
          expect.fail(`the path of ${i} in ${n} leads to another root`);
      }
      for (const i of [n, n + 1, 2 * n + 1]) {
        expect(
          codeOf(() => verifyInclusion(leafHashes[0]!, i, n, roots[n]!, [])),
          `i ${i} n ${n}`,
        ).toBe('MalformedProof');
        const longest = n > 0 ? tree.inclusionProof(n - 1, n) : [];
        expect(codeOf(() => verifyInclusion(leafHashes[0]!, i, n, roots[n]!, longest))).toBe(
          'MalformedProof',
        );
      }
    }
  });

  it('every pair 0 ≤ m ≤ n: the proof is PROOF and verifies; m > n is MalformedProof', () => {
    for (let n = 0; n <= N; n++) {
      for (let m = 0; m <= n; m++) {
        const proof = tree.consistencyProof(m, n);
        const want = naive.proof(m, n);
        if (!sameHashes(proof, want)) expect(hexes(proof), `PROOF(${m}, D[${n}])`).toEqual(hexes(want));
        verifyConsistency(m, n, roots[m]!, roots[n]!, proof);
        if (m > 0 && m < n && exactLog2(m) >= 0) {
          // a power-of-two old tree is a node of the new one: its root is never repeated in the proof
          expect(codeOf(() => verifyConsistency(m, n, roots[m]!, roots[n]!, [roots[m]!, ...proof]))).toBe(
            'MalformedProof',
          );
        }
      }
      if (n < N) {
        const back = tree.consistencyProof(n, n + 1);
        expect(codeOf(() => verifyConsistency(n + 1, n, roots[n + 1]!, roots[n]!, back))).toBe(
          'MalformedProof',
        );
        expect(codeOf(() => verifyConsistency(n + 1, n, roots[n + 1]!, roots[n]!, []))).toBe(
          'MalformedProof',
        );
      }
    }
  });
});

describe(`wrong proofs in trees of 1…${N} leaves (properties)`, () => {
  const sizeAndIndex = fc.integer({ min: 1, max: N }).chain((n) => fc.tuple(fc.nat(n - 1), fc.constant(n)));
  const twoSizes = fc
    .integer({ min: 2, max: N })
    .chain((n) => fc.tuple(fc.integer({ min: 1, max: n - 1 }), fc.constant(n)));

  it('a flipped bit in any element, the leaf or the root is InclusionFailed', () => {
    fc.assert(
      fc.property(sizeAndIndex, fc.nat(), fc.nat(255), ([i, n], which, bit) => {
        const path = tree.inclusionProof(i, n);
        const slots = path.length + 2; // every element, the leaf hash, the root
        const k = which % slots;
        const bad = path.map((p, j) => (j === k ? flip(p, bit) : p));
        const leaf = k === path.length ? flip(leafHashes[i]!, bit) : leafHashes[i]!;
        const root = k === path.length + 1 ? flip(roots[n]!, bit) : roots[n]!;
        expect(codeOf(() => verifyInclusion(leaf, i, n, root, bad))).toBe('InclusionFailed');
      }),
      { numRuns: 3_000 },
    );
  });

  it('a path of another leaf or another size never verifies unless it is the same path', () => {
    fc.assert(
      fc.property(sizeAndIndex, sizeAndIndex, ([i, n], [j, n2]) => {
        const other = tree.inclusionProof(j, n2);
        const code = codeOf(() => verifyInclusion(leafHashes[i]!, i, n, roots[n]!, other));
        if (sameHashes(other, tree.inclusionProof(i, n))) expect(code).toBe('ok');
        else expect(['InclusionFailed', 'MalformedProof']).toContain(code);
        // the right path with a leaf or root of another tree
        if (j !== i) {
          expect(
            codeOf(() => verifyInclusion(leafHashes[j]!, i, n, roots[n]!, tree.inclusionProof(i, n))),
          ).toBe(Buffer.from(leaves[j]!).equals(Buffer.from(leaves[i]!)) ? 'ok' : 'InclusionFailed');
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('a missing, extra, repeated or empty path is MalformedProof', () => {
    fc.assert(
      fc.property(sizeAndIndex, fc.nat(), ([i, n], at) => {
        const path = tree.inclusionProof(i, n);
        const call = (p: Uint8Array[]) => codeOf(() => verifyInclusion(leafHashes[i]!, i, n, roots[n]!, p));
        const k = path.length === 0 ? 0 : at % path.length;
        expect(call([...path.slice(0, k), roots[n]!, ...path.slice(k)])).toBe('MalformedProof');
        if (path.length > 0) {
          expect(call([...path.slice(0, k), ...path.slice(k + 1)])).toBe('MalformedProof');
          expect(call([...path.slice(0, k + 1), path[k]!, ...path.slice(k + 1)])).toBe('MalformedProof');
          expect(call([])).toBe('MalformedProof');
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('a flipped bit in any proof element or either root is InconsistentLog', () => {
    fc.assert(
      fc.property(twoSizes, fc.nat(), fc.nat(255), ([m, n], which, bit) => {
        const proof = tree.consistencyProof(m, n);
        const k = which % (proof.length + 2);
        const bad = proof.map((p, j) => (j === k ? flip(p, bit) : p));
        const oldRoot = k === proof.length ? flip(roots[m]!, bit) : roots[m]!;
        const newRoot = k === proof.length + 1 ? flip(roots[n]!, bit) : roots[n]!;
        expect(codeOf(() => verifyConsistency(m, n, oldRoot, newRoot, bad))).toBe('InconsistentLog');
      }),
      { numRuns: 3_000 },
    );
  });

  it('a proof between other sizes never verifies unless it is the same proof', () => {
    fc.assert(
      fc.property(twoSizes, twoSizes, ([m, n], [m2, n2]) => {
        const other = tree.consistencyProof(m2, n2);
        const code = codeOf(() => verifyConsistency(m, n, roots[m]!, roots[n]!, other));
        if (sameHashes(other, tree.consistencyProof(m, n))) expect(code).toBe('ok');
        else expect(['InconsistentLog', 'MalformedProof']).toContain(code);
        // the right proof between roots of other trees
        if (m2 !== m || n2 !== n) {
          const mixed = codeOf(() =>
            verifyConsistency(m, n, roots[m2]!, roots[n2]!, tree.consistencyProof(m, n)),
          );
          expect(mixed).toBe('InconsistentLog');
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('a missing, extra, repeated or empty proof is MalformedProof; a non-empty one for m = 0 or m = n too', () => {
    fc.assert(
      fc.property(twoSizes, fc.nat(), ([m, n], at) => {
        const proof = tree.consistencyProof(m, n);
        const call = (p: Uint8Array[]) => codeOf(() => verifyConsistency(m, n, roots[m]!, roots[n]!, p));
        const k = at % proof.length;
        expect(call([...proof.slice(0, k), ...proof.slice(k + 1)])).toBe('MalformedProof');
        expect(call([...proof.slice(0, k + 1), proof[k]!, ...proof.slice(k + 1)])).toBe('MalformedProof');
        expect(call([...proof, roots[n]!])).toBe('MalformedProof');
        expect(call([])).toBe('MalformedProof');
        expect(codeOf(() => verifyConsistency(0, n, roots[0]!, roots[n]!, proof))).toBe('MalformedProof');
        expect(codeOf(() => verifyConsistency(n, n, roots[n]!, roots[n]!, proof))).toBe('MalformedProof');
        expect(codeOf(() => verifyConsistency(m, m, roots[m]!, roots[m]!, [roots[m]!]))).toBe(
          'MalformedProof',
        );
      }),
      { numRuns: 2_000 },
    );
  });
});
