// Proof verification, RFC 9162 §2.1.3.2 and §2.1.4.2, with the spec's precise readings: whatever is
// decidable without hashing (sizes, index ≥ size, a proof that is not the RFC's exact length) is
// `MalformedProof` and is checked before any hash; `InclusionFailed` / `InconsistentLog` mean only that
// a well-formed proof gave a different root.
import { equalBytes, isSize } from './bytes.js';
import { HASH_SIZE } from './constants.js';
import { HeadLogError } from './errors.js';
import { EMPTY_ROOT, nodeHash } from './hash.js';
import { consistencyProofLength, exactLog2, inclusionPathLength } from './shape.js';

const malformed = (why: string) => new HeadLogError('MalformedProof', why);

const half = (x: number) => Math.floor(x / 2);
const odd = (x: number) => x % 2 === 1;

function checkHashes(hashes: readonly Uint8Array[], what: string): void {
  for (const h of hashes) if (h.length !== HASH_SIZE) throw malformed(`${what}: every hash is 32 bytes`);
}

function checkInclusionShape(index: number, size: number, path: readonly Uint8Array[]): void {
  if (!isSize(index) || !isSize(size)) throw malformed('index and tree_size are non-negative integers');
  if (index >= size) throw malformed(`index ${index} is not below tree_size ${size}`);
  const want = inclusionPathLength(index, size);
  if (path.length !== want) throw malformed(`the path has ${path.length} hashes, not ${want}`);
  checkHashes(path, 'path');
}

/** The root an audit path leads to (§2.1.3.2 steps 2–4). Throws `MalformedProof` only. */
export function rootFromInclusionProof(
  leafHash: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
): Uint8Array {
  checkInclusionShape(index, size, path);
  checkHashes([leafHash], 'leaf hash');
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of path) {
    if (sn === 0) throw malformed('the path is longer than the tree is deep');
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!odd(fn)) {
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw malformed('the path is shorter than the tree is deep');
  return r;
}

/** Leaf `index` with `leafHash` is in the tree of `size` with `root`; else `MalformedProof` or `InclusionFailed`. */
export function verifyInclusion(
  leafHash: Uint8Array,
  index: number,
  size: number,
  root: Uint8Array,
  path: readonly Uint8Array[],
): void {
  checkInclusionShape(index, size, path);
  checkHashes([leafHash, root], 'leaf hash and root');
  if (!equalBytes(rootFromInclusionProof(leafHash, index, size, path), root)) {
    throw new HeadLogError('InclusionFailed', `the path from leaf ${index} does not lead to the root`);
  }
}

/** The old and new roots a consistency proof leads to (§2.1.4.2), for 0 < old < new and the exact length. */
function rootsFromConsistencyProof(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  proof: readonly Uint8Array[],
): { oldRoot: Uint8Array; newRoot: Uint8Array } {
  // A power-of-two old tree is a node of the new one: its root is the seed, not repeated in the proof.
  const path = exactLog2(oldSize) >= 0 ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) throw malformed('the proof is longer than the tree is deep');
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw malformed('the proof is shorter than the tree is deep');
  return { oldRoot: fr, newRoot: sr };
}

/**
 * The tree of `newSize` with `newRoot` extends the tree of `oldSize` with `oldRoot`; else `MalformedProof`
 * (old > new, a proof that is not the RFC's exact length — empty when old is 0 or equals new) or
 * `InconsistentLog` (a well-formed proof that leads elsewhere; unequal roots of equal sizes; an old root of
 * an empty tree that is not `H("")`).
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): void {
  if (!isSize(oldSize) || !isSize(newSize)) throw malformed('sizes are non-negative integers');
  if (oldSize > newSize) throw malformed(`old_size ${oldSize} is above new_size ${newSize}`);
  const want = consistencyProofLength(oldSize, newSize);
  if (proof.length !== want) throw malformed(`the proof has ${proof.length} hashes, not ${want}`);
  checkHashes([oldRoot, newRoot, ...proof], 'roots and proof');
  const inconsistent = (why: string) => new HeadLogError('InconsistentLog', why);
  if (oldSize === newSize) {
    if (!equalBytes(oldRoot, newRoot)) throw inconsistent(`two roots for one tree of ${oldSize}`);
    return;
  }
  if (oldSize === 0) {
    if (!equalBytes(oldRoot, EMPTY_ROOT)) throw inconsistent('the empty tree\'s root is H("")');
    return;
  }
  const got = rootsFromConsistencyProof(oldSize, newSize, oldRoot, proof);
  if (!equalBytes(got.oldRoot, oldRoot)) throw inconsistent(`the proof does not lead to the old root`);
  if (!equalBytes(got.newRoot, newRoot)) throw inconsistent(`the proof does not lead to the new root`);
}
