// Every proof of every tampered element fails, and with the right code: a changed hash is a mismatch
// (InclusionFailed / InconsistentLog); a changed shape is MalformedProof, decided before any hash.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NaiveTree, testLeaves } from '../test/naive.js';
import { HeadLogError } from './errors.js';
import { leafHash } from './hash.js';
import { MemoryTree } from './memory-tree.js';
import { verifyConsistency, verifyInclusion } from './verify.js';

const N = 33;
const leaves = testLeaves(N + 1);
const naive = new NaiveTree(leaves);
const tree = new MemoryTree();
for (const l of leaves.slice(0, N)) tree.appendLeaf(l);

const flip = (h: Uint8Array, bit = 0) => {
  const c = h.slice();
  c[bit >> 3]! ^= 1 << (bit & 7);
  return c;
};

function codeOf(f: () => void): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    if (e instanceof HeadLogError) return e.code;
    throw e;
  }
}

describe('inclusion: every tampered element of every proof up to 33 leaves', () => {
  it('each path element, the leaf, the root, the index', () => {
    for (let n = 1; n <= N; n++) {
      const root = naive.root(n);
      for (let i = 0; i < n; i++) {
        const path = tree.inclusionProof(i, n);
        const lh = leafHash(leaves[i]!);
        expect(codeOf(() => verifyInclusion(lh, i, n, root, path))).toBe('ok');
        path.forEach((_, k) => {
          const bad = path.map((p, j) => (j === k ? flip(p, (k * 37) % 256) : p));
          expect(
            codeOf(() => verifyInclusion(lh, i, n, root, bad)),
            `n ${n} i ${i} elem ${k}`,
          ).toBe('InclusionFailed');
        });
        expect(codeOf(() => verifyInclusion(leafHash(leaves[N]!), i, n, root, path))).toBe('InclusionFailed');
        expect(codeOf(() => verifyInclusion(lh, i, n, flip(root, 255), path))).toBe('InclusionFailed');
        for (let other = 0; other < n; other++) {
          if (other === i) continue;
          // another index is either another shape (MalformedProof) or leads elsewhere — never ok
          expect(['InclusionFailed', 'MalformedProof']).toContain(
            codeOf(() => verifyInclusion(lh, other, n, root, path)),
          );
        }
      }
    }
  });

  it('a missing, extra or reordered element', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: N }).chain((n) => fc.tuple(fc.nat(n - 1), fc.constant(n))),
        ([i, n]) => {
          const path = tree.inclusionProof(i, n);
          const lh = leafHash(leaves[i]!);
          const root = naive.root(n);
          expect(codeOf(() => verifyInclusion(lh, i, n, root, path.slice(1)))).toBe('MalformedProof');
          expect(codeOf(() => verifyInclusion(lh, i, n, root, [...path, path[0]!]))).toBe('MalformedProof');
          expect(codeOf(() => verifyInclusion(lh, i, n, root, [root, ...path]))).toBe('MalformedProof');
          if (path.length >= 2 && path[0]!.some((b, k) => b !== path[1]![k])) {
            const swapped = [path[1]!, path[0]!, ...path.slice(2)];
            expect(codeOf(() => verifyInclusion(lh, i, n, root, swapped))).toBe('InclusionFailed');
          }
        },
      ),
    );
  });
});

describe('consistency: every tampered element of every proof up to 33 leaves', () => {
  it('each proof element, the old root, the new root', () => {
    for (let n = 1; n <= N; n++) {
      for (let m = 1; m < n; m++) {
        const proof = tree.consistencyProof(m, n);
        const [oldRoot, newRoot] = [naive.root(m), naive.root(n)];
        expect(codeOf(() => verifyConsistency(m, n, oldRoot, newRoot, proof))).toBe('ok');
        proof.forEach((_, k) => {
          const bad = proof.map((p, j) => (j === k ? flip(p, (k * 53) % 256) : p));
          expect(
            codeOf(() => verifyConsistency(m, n, oldRoot, newRoot, bad)),
            `${m}→${n} elem ${k}`,
          ).toBe('InconsistentLog');
        });
        expect(codeOf(() => verifyConsistency(m, n, flip(oldRoot), newRoot, proof))).toBe('InconsistentLog');
        expect(codeOf(() => verifyConsistency(m, n, oldRoot, flip(newRoot), proof))).toBe('InconsistentLog');
        expect(codeOf(() => verifyConsistency(m, n, oldRoot, newRoot, proof.slice(1)))).toBe(
          'MalformedProof',
        );
        expect(codeOf(() => verifyConsistency(m, n, oldRoot, newRoot, [...proof, newRoot]))).toBe(
          'MalformedProof',
        );
        // the same proof for another old size never verifies
        for (let other = 1; other < n; other++) {
          if (other === m) continue;
          expect(['InconsistentLog', 'MalformedProof']).toContain(
            codeOf(() => verifyConsistency(other, n, oldRoot, newRoot, proof)),
          );
        }
      }
    }
  });

  it('equal sizes, the empty old tree, and an old size above the new one', () => {
    const r5 = naive.root(5);
    const empty = naive.root(0);
    expect(codeOf(() => verifyConsistency(5, 5, r5, r5, []))).toBe('ok');
    expect(codeOf(() => verifyConsistency(5, 5, r5, naive.root(6), []))).toBe('InconsistentLog');
    expect(codeOf(() => verifyConsistency(5, 5, r5, r5, [r5]))).toBe('MalformedProof');
    expect(codeOf(() => verifyConsistency(0, 5, empty, r5, []))).toBe('ok');
    expect(codeOf(() => verifyConsistency(0, 5, r5, r5, []))).toBe('InconsistentLog');
    expect(codeOf(() => verifyConsistency(0, 5, empty, r5, [r5]))).toBe('MalformedProof');
    expect(codeOf(() => verifyConsistency(0, 0, empty, empty, []))).toBe('ok');
    expect(codeOf(() => verifyConsistency(6, 5, naive.root(6), r5, tree.consistencyProof(5, 6)))).toBe(
      'MalformedProof',
    );
  });

  it('MalformedProof wins over a hash mismatch', () => {
    const path = tree.inclusionProof(3, 10);
    const wrongRoot = naive.root(9);
    expect(codeOf(() => verifyInclusion(leafHash(leaves[3]!), 3, 10, wrongRoot, path.slice(1)))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyInclusion(leafHash(leaves[3]!), 10, 10, wrongRoot, path))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyInclusion(leafHash(leaves[0]!), 0, 0, wrongRoot, []))).toBe('MalformedProof');
    const proof = tree.consistencyProof(4, 10);
    expect(codeOf(() => verifyConsistency(4, 10, wrongRoot, wrongRoot, [naive.root(4), ...proof]))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyConsistency(3, 3, wrongRoot, naive.root(3), [wrongRoot]))).toBe(
      'MalformedProof',
    );
  });

  it('hashes of another length are MalformedProof', () => {
    const path = tree.inclusionProof(2, 7);
    const short = path.map((p, k) => (k === 0 ? p.subarray(0, 31) : p));
    expect(codeOf(() => verifyInclusion(leafHash(leaves[2]!), 2, 7, naive.root(7), short))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyInclusion(leafHash(leaves[2]!), 2, 7, new Uint8Array(33), path))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyInclusion(leafHash(leaves[2]!), -1, 7, naive.root(7), path))).toBe(
      'MalformedProof',
    );
    expect(codeOf(() => verifyInclusion(leafHash(leaves[2]!), 2.5, 7, naive.root(7), path))).toBe(
      'MalformedProof',
    );
  });
});
