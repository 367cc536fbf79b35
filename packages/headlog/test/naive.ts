// RFC 9162 §2.1 straight from its recursive definitions, for tests: MTH, PATH and PROOF/SUBPROOF over an
// array of leaves, hashed with @noble/hashes directly (the package hashes with hash-wasm), so that a
// defect in the package's hashing, splitting or ordering cannot cancel out.
import { blake3 } from '@noble/hashes/blake3.js';

const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

export const naiveLeafHash = (leaf: Uint8Array) => blake3(cat(Uint8Array.of(0), leaf));
export const naiveNodeHash = (l: Uint8Array, r: Uint8Array) => blake3(cat(Uint8Array.of(1), l, r));

/** k: the largest power of two smaller than n (n > 1). */
export function naiveSplit(n: number): number {
  let k = 1;
  while (k << 1 < n) k <<= 1;
  return k;
}

/** The recursive MTH over leaves[lo:hi], memoised per (lo, hi) so that every size of one list is cheap. */
export class NaiveTree {
  private readonly memo = new Map<string, Uint8Array>();
  constructor(readonly leaves: readonly Uint8Array[]) {}

  mth(lo: number, hi: number): Uint8Array {
    const n = hi - lo;
    if (n === 0) return blake3(new Uint8Array(0));
    if (n === 1) return naiveLeafHash(this.leaves[lo]!);
    const key = `${lo}:${hi}`;
    const seen = this.memo.get(key);
    if (seen) return seen;
    const k = naiveSplit(n);
    const h = naiveNodeHash(this.mth(lo, lo + k), this.mth(lo + k, hi));
    this.memo.set(key, h);
    return h;
  }

  root(size: number): Uint8Array {
    return this.mth(0, size);
  }

  /** PATH(m, D[lo:hi]) */
  path(m: number, lo: number, hi: number): Uint8Array[] {
    const n = hi - lo;
    if (n === 1) return [];
    const k = naiveSplit(n);
    if (m < k) return [...this.path(m, lo, lo + k), this.mth(lo + k, hi)];
    return [...this.path(m - k, lo + k, hi), this.mth(lo, lo + k)];
  }

  /** SUBPROOF(m, D[lo:hi], b) */
  subproof(m: number, lo: number, hi: number, b: boolean): Uint8Array[] {
    const n = hi - lo;
    if (m === n) return b ? [] : [this.mth(lo, hi)];
    const k = naiveSplit(n);
    if (m <= k) return [...this.subproof(m, lo, lo + k, b), this.mth(lo + k, hi)];
    return [...this.subproof(m - k, lo + k, hi, false), this.mth(lo, lo + k)];
  }

  /** PROOF(m, D[0:n]); empty for m = 0 and m = n. */
  proof(m: number, n: number): Uint8Array[] {
    return m === 0 || m === n ? [] : this.subproof(m, 0, n, true);
  }
}

/** Distinct 162-byte leaves in the spec's shape (the tag, then bytes derived from i). */
export function testLeaves(count: number, seed = 0): Uint8Array[] {
  const tag = new TextEncoder().encode('everdict.headlog/1');
  return Array.from({ length: count }, (_, i) => {
    const leaf = new Uint8Array(162);
    leaf.set(tag, 0);
    leaf.set(blake3(new TextEncoder().encode(`leaf-${seed}-${i}`)), 18);
    new DataView(leaf.buffer).setUint32(158, i, false);
    return leaf;
  });
}

export const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
export const hexes = (bs: readonly Uint8Array[]) => bs.map(hex);
