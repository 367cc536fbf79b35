// A real Merkle tree of up to 2^53 − 1 leaves that is cheap to hash: every leaf is the same default leaf
// except a few "special" ones, so a perfect subtree without a special leaf has the hash P[level] of its
// height, and only subtrees over special leaves are hashed. The naive RFC recursion runs over it unchanged,
// which lets tests check proofs for sizes past 2^31 and 2^32 (where 32-bit arithmetic would break).
import { naiveLeafHash, naiveNodeHash, naiveSplit } from './naive.js';

export class SparseTree {
  private readonly uniform: Uint8Array[] = [];
  private readonly memo = new Map<string, Uint8Array>();
  private readonly specials: number[];

  constructor(
    defaultLeaf: Uint8Array,
    private readonly special: ReadonlyMap<number, Uint8Array>,
  ) {
    this.uniform.push(naiveLeafHash(defaultLeaf));
    for (let l = 1; l <= 53; l++)
      this.uniform.push(naiveNodeHash(this.uniform[l - 1]!, this.uniform[l - 1]!));
    this.specials = [...special.keys()].sort((a, b) => a - b);
  }

  private hasSpecial(lo: number, hi: number): boolean {
    return this.specials.some((s) => s >= lo && s < hi);
  }

  leafHash(index: number): Uint8Array {
    const leaf = this.special.get(index);
    return leaf ? naiveLeafHash(leaf) : this.uniform[0]!;
  }

  /** The perfect node (level, index). */
  node = (level: number, index: number): Uint8Array => {
    const lo = index * 2 ** level;
    if (!this.hasSpecial(lo, lo + 2 ** level)) return this.uniform[level]!;
    if (level === 0) return this.leafHash(index);
    const key = `${level}:${index}`;
    const seen = this.memo.get(key);
    if (seen) return seen;
    const h = naiveNodeHash(this.node(level - 1, 2 * index), this.node(level - 1, 2 * index + 1));
    this.memo.set(key, h);
    return h;
  };

  /** MTH(D[lo:hi]) by the RFC's recursion; perfect aligned spans come from `node`. */
  mth(lo: number, hi: number): Uint8Array {
    const n = hi - lo;
    if (n === 1) return this.leafHash(lo);
    const level = exactLog2(n);
    if (level !== undefined && lo % n === 0) return this.node(level, lo / n);
    const k = naiveSplit53(n);
    return naiveNodeHash(this.mth(lo, lo + k), this.mth(lo + k, hi));
  }

  path(m: number, lo: number, hi: number): Uint8Array[] {
    const n = hi - lo;
    if (n === 1) return [];
    const k = naiveSplit53(n);
    if (m < k) return [...this.path(m, lo, lo + k), this.mth(lo + k, hi)];
    return [...this.path(m - k, lo + k, hi), this.mth(lo, lo + k)];
  }

  subproof(m: number, lo: number, hi: number, b: boolean): Uint8Array[] {
    const n = hi - lo;
    if (m === n) return b ? [] : [this.mth(lo, hi)];
    const k = naiveSplit53(n);
    if (m <= k) return [...this.subproof(m, lo, lo + k, b), this.mth(lo + k, hi)];
    return [...this.subproof(m - k, lo + k, hi, false), this.mth(lo, lo + k)];
  }
}

/** The naive split without 32-bit shifts (naiveSplit is only for small trees). */
function naiveSplit53(n: number): number {
  if (n <= 2 ** 30) return naiveSplit(n);
  let k = 2 ** 30;
  while (k * 2 < n) k *= 2;
  return k;
}

function exactLog2(n: number): number | undefined {
  let level = 0;
  let x = n;
  while (x > 1 && x % 2 === 0) {
    x /= 2;
    level++;
  }
  return x === 1 ? level : undefined;
}
