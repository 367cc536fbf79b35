import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hex, NaiveTree, naiveLeafHash, naiveNodeHash, testLeaves } from '../test/naive.js';
import { CompactRange } from './compact-range.js';
import { blake3, emptyRoot, leafHash, nodeHash } from './hash.js';
import { MemoryTree, treeRoot } from './memory-tree.js';
import { frontierNodes } from './shape.js';

const SIZES = 2_048;
const leaves = testLeaves(SIZES);
const naive = new NaiveTree(leaves);

describe('hashing', () => {
  it('is BLAKE3-256: the official empty-input vector, and H("") is the empty root', () => {
    expect(hex(blake3(new Uint8Array(0)))).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
    expect(hex(emptyRoot())).toBe(hex(nobleBlake3(new Uint8Array(0))));
  });

  it('prefixes leaves with 0x00 and nodes with 0x01, for any input (agrees with @noble/hashes)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 400 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (leaf, l, r) => {
          expect(hex(leafHash(leaf))).toBe(hex(naiveLeafHash(leaf)));
          expect(hex(nodeHash(l, r))).toBe(hex(naiveNodeHash(l, r)));
          expect(hex(nodeHash(l, r))).not.toBe(hex(nodeHash(r, l)));
        },
      ),
    );
  });
});

describe('tree roots against the RFC recursion', () => {
  it(`every size 0..${SIZES}: appended one by one, recomputed from the leaves, and read back from stored nodes`, () => {
    const tree = new MemoryTree();
    expect(hex(tree.root())).toBe(hex(emptyRoot()));
    for (let n = 1; n <= SIZES; n++) {
      tree.appendLeaf(leaves[n - 1]!);
      expect(hex(tree.root()), `size ${n}`).toBe(hex(naive.root(n)));
    }
    for (let n = 0; n <= SIZES; n++) expect(hex(tree.rootAt(n)), `rootAt ${n}`).toBe(hex(naive.root(n)));
    for (const n of [0, 1, 2, 3, 7, 8, 9, 1000, 1023, 1024, 1025, 2047, 2048]) {
      expect(hex(treeRoot(leaves.slice(0, n)))).toBe(hex(naive.root(n)));
    }
  });

  it('the root depends on every leaf and on their order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 300 }), fc.nat(), fc.nat(), (n, a, b) => {
        const i = a % n;
        const j = b % n;
        const base = hex(treeRoot(leaves.slice(0, n)));
        const flipped = leaves.slice(0, n).map((l) => l.slice());
        flipped[i]![100]! ^= 1;
        expect(hex(treeRoot(flipped))).not.toBe(base);
        if (i !== j) {
          const swapped = leaves.slice(0, n);
          [swapped[i], swapped[j]] = [swapped[j]!, swapped[i]!];
          expect(hex(treeRoot(swapped))).not.toBe(base);
        }
      }),
    );
  });
});

describe('CompactRange', () => {
  it('reports each node an append completes, exactly once, with its (level, index) and hash', () => {
    const range = CompactRange.empty();
    const seen = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const nodes = range.append(leafHash(leaves[i]!));
      expect(nodes[0]).toMatchObject({ level: 0, index: i });
      for (const node of nodes) {
        const key = `${node.level}:${node.index}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
        const w = 2 ** node.level;
        expect(hex(node.hash)).toBe(hex(naive.mth(node.index * w, (node.index + 1) * w)));
        expect((node.index + 1) * w).toBe(i + 1); // completed by this very leaf
      }
    }
    expect(seen.size).toBe(2 * 300 - 4); // n leaves + one interior node per merge (300 = 256+32+8+4)
  });

  it('restores from the frontier nodes a store holds and keeps extending to the same roots', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 1, max: 100 }), (cut, more) => {
        const tree = new MemoryTree();
        for (const l of leaves.slice(0, cut)) tree.appendLeaf(l);
        const restored = CompactRange.restore(cut, tree.readNodes(frontierNodes(cut)));
        expect(hex(restored.root())).toBe(hex(naive.root(cut)));
        for (let i = cut; i < cut + more; i++) restored.append(leafHash(leaves[i]!));
        expect(hex(restored.root())).toBe(hex(naive.root(cut + more)));
        expect(restored.frontier().length).toBe(frontierNodes(cut + more).length);
      }),
      { numRuns: 60 },
    );
  });

  it('refuses a frontier of the wrong shape and a leaf hash that is not 32 bytes', () => {
    expect(() => CompactRange.restore(5, [new Uint8Array(32)])).toThrow(/MissingNode/);
    expect(() => CompactRange.restore(5, [new Uint8Array(32), new Uint8Array(31)])).toThrow(/MissingNode/);
    // A size that is not a tree size is refused before any node is looked at (1.5 "has" one frontier node).
    for (const size of [1.5, -1, Number.NaN, 2 ** 53])
      expect(() => CompactRange.restore(size, [new Uint8Array(32)])).toThrow(/OutOfRange/);
    expect(() => CompactRange.empty().append(new Uint8Array(31))).toThrow(/OutOfRange/);
  });
});
