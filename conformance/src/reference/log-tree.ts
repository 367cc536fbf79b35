// The head log's tree (spec/witnessed-heads.md; RFC 9162 §2.1 with H = BLAKE3-256), written straight from
// the RFC's recursive definitions — MTH, PATH, PROOF/SUBPROOF — and verified by the same recursion run
// backwards (not the RFC's iterative verifier, which @everdict/headlog uses), so the two agree only if
// both follow the definitions. `LogDefects` turns single rules off: the suite's mutants.
import { sha256 } from '@noble/hashes/sha2.js';
import { ascii, concat, H, toHex, u64 } from './bytes.js';

export const LEAF_TAG = 'everdict.headlog/1';
export const LEAF_BYTES = 162;

/** One rule broken at a time, for mutants the suite must fail. */
export interface LogDefects {
  /** SHA-256 in place of BLAKE3. */
  readonly sha256?: boolean;
  /** leaf_hash = H(leaf), without the 0x00 prefix. */
  readonly noLeafPrefix?: boolean;
  /** Expects a proof from a power-of-two old size to repeat the old root (RFC 6962's reading error). */
  readonly repeatOldRoot?: boolean;
  /** Accepts index ≥ tree_size and hashes on. */
  readonly indexBeyondSize?: boolean;
  /** Reports a proof of the wrong length as a hash mismatch instead of MalformedProof. */
  readonly shapeAsMismatch?: boolean;
  /** Accepts unknown fields in the input objects. */
  readonly lenientFields?: boolean;
  /** Prints log-root's tree_size as a JSON number. */
  readonly sizeAsNumber?: boolean;
  /** Takes 32 zero bytes as the empty tree's root instead of H(""). */
  readonly emptyRootZeros?: boolean;
}

export class LogHasher {
  constructor(readonly defects: LogDefects = {}) {}

  h(bytes: Uint8Array): Uint8Array {
    return this.defects.sha256 ? sha256(bytes) : H(bytes);
  }

  empty(): Uint8Array {
    return this.defects.emptyRootZeros ? new Uint8Array(32) : this.h(new Uint8Array(0));
  }

  leaf(leaf: Uint8Array): Uint8Array {
    return this.defects.noLeafPrefix ? this.h(leaf) : this.h(concat(Uint8Array.of(0x00), leaf));
  }

  node(left: Uint8Array, right: Uint8Array): Uint8Array {
    return this.h(concat(Uint8Array.of(0x01), left, right));
  }
}

/** k: the largest power of two smaller than n (n > 1). */
export function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) of leaf hashes. */
export function mth(hasher: LogHasher, hashes: readonly Uint8Array[]): Uint8Array {
  if (hashes.length === 0) return hasher.empty();
  if (hashes.length === 1) return hashes[0]!;
  const k = split(hashes.length);
  return hasher.node(mth(hasher, hashes.slice(0, k)), mth(hasher, hashes.slice(k)));
}

/** PATH(m, D[n]). */
export function path(hasher: LogHasher, m: number, hashes: readonly Uint8Array[]): Uint8Array[] {
  const n = hashes.length;
  if (n <= 1) return [];
  const k = split(n);
  return m < k
    ? [...path(hasher, m, hashes.slice(0, k)), mth(hasher, hashes.slice(k))]
    : [...path(hasher, m - k, hashes.slice(k)), mth(hasher, hashes.slice(0, k))];
}

function subproof(hasher: LogHasher, m: number, hashes: readonly Uint8Array[], b: boolean): Uint8Array[] {
  const n = hashes.length;
  if (m === n) return b ? [] : [mth(hasher, hashes)];
  const k = split(n);
  return m <= k
    ? [...subproof(hasher, m, hashes.slice(0, k), b), mth(hasher, hashes.slice(k))]
    : [...subproof(hasher, m - k, hashes.slice(k), false), mth(hasher, hashes.slice(0, k))];
}

/** PROOF(m, D[n]): empty when m is 0 or n. */
export function consistencyProof(hasher: LogHasher, m: number, hashes: readonly Uint8Array[]): Uint8Array[] {
  return m === 0 || m === hashes.length ? [] : subproof(hasher, m, hashes, true);
}

/** |PATH(m, D[n])| for m < n, by the same recursion. */
export function pathLength(m: number, n: number): number {
  if (n <= 1) return 0;
  const k = split(n);
  return 1 + (m < k ? pathLength(m, k) : pathLength(m - k, n - k));
}

/** |SUBPROOF(m, D[n], b)|. `repeat` counts the old root as an element (the defect). */
function subproofLength(m: number, n: number, b: boolean, repeat: boolean): number {
  if (m === n) return b && !repeat ? 0 : 1;
  const k = split(n);
  return 1 + (m <= k ? subproofLength(m, k, b, repeat) : subproofLength(m - k, n - k, false, repeat));
}

export function proofLength(m: number, n: number, defects: LogDefects = {}): number {
  return m === 0 || m === n ? 0 : subproofLength(m, n, true, defects.repeatOldRoot === true);
}

/**
 * The root a path leads to: PATH's recursion run backwards. The last element is the sibling at the top
 * split; the first is the leaf's sibling. Caller has checked the length.
 */
export function rootFromPath(
  hasher: LogHasher,
  m: number,
  n: number,
  leafHash: Uint8Array,
  elements: readonly Uint8Array[],
): Uint8Array {
  if (n <= 1 || elements.length === 0) return leafHash;
  const k = split(n);
  const top = elements[elements.length - 1]!;
  const rest = elements.slice(0, -1);
  return m < k
    ? hasher.node(rootFromPath(hasher, m, k, leafHash, rest), top)
    : hasher.node(top, rootFromPath(hasher, m - k, n - k, leafHash, rest));
}

/**
 * The old and new roots a consistency proof leads to: SUBPROOF's recursion run backwards. Where the
 * recursion reaches the old tree itself (m = n with b set) the subtree's hash is the given old root.
 */
export function rootsFromProof(
  hasher: LogHasher,
  m: number,
  n: number,
  b: boolean,
  oldRoot: Uint8Array,
  elements: readonly Uint8Array[],
): { old: Uint8Array; new: Uint8Array } {
  if (m === n) {
    if (b && !hasher.defects.repeatOldRoot) return { old: oldRoot, new: oldRoot };
    const node = elements[elements.length - 1]!;
    return { old: node, new: node };
  }
  const k = split(n);
  const top = elements[elements.length - 1]!;
  const rest = elements.slice(0, -1);
  if (m <= k) {
    const inner = rootsFromProof(hasher, m, k, b, oldRoot, rest);
    return { old: inner.old, new: hasher.node(inner.new, top) };
  }
  const inner = rootsFromProof(hasher, m - k, n - k, false, oldRoot, rest);
  return { old: hasher.node(top, inner.old), new: hasher.node(top, inner.new) };
}

/** A leaf from ids, as the spec lays it out (162 bytes). */
export function leafFromIds(l: {
  tenant: string;
  run: string;
  group?: string;
  length: bigint;
  head: Uint8Array;
  loggedMs: bigint;
}): Uint8Array {
  const id = (s: string) => H(new TextEncoder().encode(s));
  return concat(
    ascii(LEAF_TAG),
    id(l.tenant),
    id(l.run),
    l.group === undefined ? new Uint8Array(32) : id(l.group),
    u64(l.length),
    l.head,
    u64(l.loggedMs),
  );
}

export const hexOf = toHex;
