// The shape of RFC 9162 §2.1 proofs, without hashing: which subtrees an audit path or a consistency
// proof names, in the RFC's order. Every proof element is MTH(D[begin:end]) of one span; a span is either
// a perfect subtree (a node the log stores) or the ragged right edge of a tree, whose hash is the fold of
// the perfect subtrees that cover it. Sizes are JS numbers, so arithmetic is used instead of 32-bit
// bitwise operators (trees past 2^31 leaves stay exact).
import { HeadLogError } from './errors.js';

/** The leaves `[begin, end)`. */
export interface Span {
  readonly begin: number;
  readonly end: number;
}

/** The perfect subtree of height `level` over the leaves `[index·2^level, (index+1)·2^level)`. */
export interface NodeId {
  readonly level: number;
  readonly index: number;
}

/** The largest power of two strictly below `n` (n ≥ 2): RFC 9162's split point k. */
export function splitPoint(n: number): number {
  if (n <= 2 ** 31) return 2 ** (31 - Math.clz32(n - 1)); // the highest set bit of n − 1
  let k = 2 ** 31;
  while (k * 2 < n) k *= 2;
  return k;
}

/** log2(n) when n is a power of two, else -1. */
export function exactLog2(n: number): number {
  if (n <= 2 ** 31) return n > 0 && (n & (n - 1)) === 0 ? 31 - Math.clz32(n) : -1;
  let level = 31;
  let x = n / 2 ** 31;
  while (x > 1 && x % 2 === 0) {
    x /= 2;
    level++;
  }
  return x === 1 ? level : -1;
}

/** PATH(index, D[0:size]) as spans, leaf-adjacent first (RFC 9162 §2.1.3.1). Caller checks index < size. */
export function inclusionSpans(index: number, size: number): Span[] {
  const top: Span[] = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      top.push({ begin: lo + k, end: hi });
      hi = lo + k;
    } else {
      top.push({ begin: lo, end: lo + k });
      lo += k;
    }
  }
  return top.reverse();
}

/** PROOF(old, D[0:size]) = SUBPROOF(old, D[0:size], true) as spans (RFC 9162 §2.1.4.1). 0 < old < size. */
export function consistencySpans(oldSize: number, size: number): Span[] {
  const top: Span[] = [];
  let lo = 0;
  let hi = size;
  let m = oldSize;
  let whole = true; // the RFC's b: the subtree at hand is the old tree itself
  for (;;) {
    const n = hi - lo;
    if (m === n) {
      if (!whole) top.push({ begin: lo, end: hi });
      break;
    }
    const k = splitPoint(n);
    if (m <= k) {
      top.push({ begin: lo + k, end: hi });
      hi = lo + k;
    } else {
      top.push({ begin: lo, end: lo + k });
      lo += k;
      m -= k;
      whole = false;
    }
  }
  return top.reverse();
}

/** The RFC's exact audit-path length for `index` in a tree of `size` (index < size). */
export function inclusionPathLength(index: number, size: number): number {
  return inclusionSpans(index, size).length;
}

/** The RFC's exact consistency-proof length: 0 when old is 0 or equals size, else |PROOF(old, D[size])|. */
export function consistencyProofLength(oldSize: number, size: number): number {
  return oldSize === 0 || oldSize === size ? 0 : consistencySpans(oldSize, size).length;
}

/**
 * The perfect subtrees covering `[begin, end)`, left to right, each as large as alignment allows. For a
 * proof's span this is one node when the span is perfect, else the right edge's perfect pieces (at most
 * one per level).
 */
export function spanNodes(span: Span): NodeId[] {
  if (!(span.begin < span.end)) throw new HeadLogError('OutOfRange', 'an empty span has no nodes');
  const len = span.end - span.begin;
  const level = exactLog2(len);
  if (level >= 0 && span.begin % len === 0) return [{ level, index: span.begin / len }];
  const nodes: NodeId[] = [];
  const top = 2 * splitPoint(len + 1); // the smallest power of two ≥ len + 1 … ≥ len
  if (span.begin % top === 0) {
    // a proof's right edge: begin is aligned past len, so len's set bits, high to low, are the nodes
    let at = span.begin;
    for (let w = top / 2, l = exactLog2(top) - 1; w >= 1; w /= 2, l--) {
      if (span.end - at >= w) {
        nodes.push({ level: l, index: at / w });
        at += w;
      }
    }
    return nodes;
  }
  let at = span.begin;
  while (at < span.end) {
    let width = 1;
    let level = 0;
    while (at % (width * 2) === 0 && at + width * 2 <= span.end) {
      width *= 2;
      level++;
    }
    nodes.push({ level, index: at / width });
    at += width;
  }
  return nodes;
}

/** The perfect subtrees whose fold is the root of a tree of `size` leaves: the compact range [0, size). */
export function frontierNodes(size: number): NodeId[] {
  return size === 0 ? [] : spanNodes({ begin: 0, end: size });
}
