import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  consistencyProofLength,
  consistencySpans,
  frontierNodes,
  inclusionPathLength,
  inclusionSpans,
  spanNodes,
  splitPoint,
} from './shape.js';

// Closed forms over BigInt (independent of the recursion the package uses): an audit path has
// `inner + border` elements, inner = bit length of index XOR (size − 1), border = popcount(index >> inner);
// a consistency proof from m to n is the audit path of the node (shift, (m−1) >> shift) with
// shift = trailing zeros of m, plus the old subtree root unless m is that very 2^shift.
const bitLength = (x: bigint) => x.toString(2).replace(/^0+/, '').length;
const popcount = (x: bigint) => [...x.toString(2)].filter((c) => c === '1').length;
const trailingZeros = (x: bigint) => {
  let k = 0;
  while (((x >> BigInt(k)) & 1n) === 0n) k++;
  return k;
};
const pathLength = (i: bigint, n: bigint) => {
  const inner = bitLength(i ^ (n - 1n));
  return inner + popcount(i >> BigInt(inner));
};
const proofLength = (m: bigint, n: bigint) => {
  if (m === 0n || m === n) return 0;
  const shift = trailingZeros(m);
  const inner = bitLength((m - 1n) ^ (n - 1n)) - shift;
  const border = popcount((m - 1n) >> BigInt(bitLength((m - 1n) ^ (n - 1n))));
  return (m === 1n << BigInt(shift) ? 0 : 1) + inner + border;
};

const MAX = Number.MAX_SAFE_INTEGER;
const size = fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: MAX }));

describe('proof shapes', () => {
  it('the audit path length is inner + border, for sizes up to 2^53 − 1', () => {
    fc.assert(
      fc.property(size, fc.double({ min: 0, max: 1, noNaN: true }), (n, f) => {
        const i = Math.min(n - 1, Math.floor(f * n));
        expect(inclusionPathLength(i, n)).toBe(pathLength(BigInt(i), BigInt(n)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('the consistency proof length follows the closed form, for sizes up to 2^53 − 1', () => {
    fc.assert(
      fc.property(size, fc.double({ min: 0, max: 1, noNaN: true }), (n, f) => {
        const m = Math.floor(f * n);
        expect(consistencyProofLength(m, n)).toBe(proofLength(BigInt(m), BigInt(n)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('a power-of-two old size never names the old tree itself', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 1, max: MAX }), (k, extra) => {
        const m = 2 ** k;
        const n = Math.min(MAX, m + extra);
        if (n <= m) return;
        expect(consistencySpans(m, n).some((s) => s.begin === 0 && s.end === m)).toBe(false);
      }),
    );
  });

  it('spans of a path are disjoint, do not contain the leaf, and with it cover the tree', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5_000 }), fc.nat(), (n, x) => {
        const i = x % n;
        const spans = [...inclusionSpans(i, n), { begin: i, end: i + 1 }].sort((a, b) => a.begin - b.begin);
        let at = 0;
        for (const s of spans) {
          expect(s.begin).toBe(at);
          at = s.end;
        }
        expect(at).toBe(n);
      }),
    );
  });

  it('spanNodes covers a span with aligned perfect subtrees; frontierNodes is the compact range', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX - 1 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (begin, len) => {
          const end = Math.min(MAX, begin + len);
          if (end <= begin) return;
          let at = begin;
          for (const node of spanNodes({ begin, end })) {
            const w = 2 ** node.level;
            expect(node.index * w).toBe(at);
            at += w;
          }
          expect(at).toBe(end);
        },
      ),
    );
    expect(frontierNodes(0)).toEqual([]);
    expect(frontierNodes(13)).toEqual([
      { level: 3, index: 0 },
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ]);
    expect(frontierNodes(2 ** 40 + 2 ** 33 + 1)).toEqual([
      { level: 40, index: 0 },
      { level: 33, index: 128 },
      { level: 0, index: 2 ** 40 + 2 ** 33 },
    ]);
  });

  it('the split point is the largest power of two below n', () => {
    expect([2, 3, 4, 5, 8, 9, 2 ** 40 + 1].map(splitPoint)).toEqual([1, 2, 2, 4, 4, 8, 2 ** 40]);
  });
});
