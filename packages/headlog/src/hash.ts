// The BLAKE3 seam (`H` of runrecord.md): hash-wasm's reused WebAssembly hasher, as in @everdict/runrecord,
// with @noble/hashes where WebAssembly is missing. Both compute the same function. This package cannot
// import runrecord's seam: runrecord's CLI depends on this package (the log commands), so the dependency
// would be a cycle; it uses the same library and the same fallback instead.
//
// Leaf and node inputs are written into scratch buffers so that each hash is one `update` call and the
// only allocation is the digest.
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { createBLAKE3, type IHasher } from 'hash-wasm';
import { LEAF_SIZE } from './constants.js';

export type HashBackendName = 'hash-wasm' | 'noble';

let wasmHasher: IHasher | null = null;
try {
  wasmHasher = await createBLAKE3(256);
} catch {
  wasmHasher = null;
}

function wasmHash(data: Uint8Array): Uint8Array {
  const h = wasmHasher!;
  h.init();
  h.update(data);
  return h.digest('binary');
}

const impl: (data: Uint8Array) => Uint8Array = wasmHasher ? wasmHash : (data) => nobleBlake3(data);

/** BLAKE3-256 of `data`. */
export function blake3(data: Uint8Array): Uint8Array {
  return impl(data);
}

/** Which implementation computes `blake3` in this process. */
export function hashBackend(): HashBackendName {
  return wasmHasher ? 'hash-wasm' : 'noble';
}

/** `H("")`, the root of the empty tree (module-private: callers get copies from `emptyRoot()`). */
export const EMPTY_ROOT: Uint8Array = blake3(new Uint8Array(0));

/** `H("")`: the root of the empty tree (a fresh copy). */
export function emptyRoot(): Uint8Array {
  return EMPTY_ROOT.slice();
}

const NODE_INPUT = new Uint8Array(65);
NODE_INPUT[0] = 0x01;
/** `H(0x01 ‖ left ‖ right)`. Both inputs are 32 bytes (not checked here: callers hold hashes). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  NODE_INPUT.set(left, 1);
  NODE_INPUT.set(right, 33);
  return impl(NODE_INPUT);
}

const LEAF_INPUT = new Uint8Array(1 + LEAF_SIZE);
/**
 * `H(0x00 ‖ leaf)`. The tree hashes whatever bytes it is given (RFC 9162 does not look inside a leaf);
 * the spec's leaves are 162 bytes, and those take the scratch-buffer path.
 */
export function leafHash(leaf: Uint8Array): Uint8Array {
  if (leaf.length === LEAF_SIZE) {
    LEAF_INPUT.set(leaf, 1);
    return impl(LEAF_INPUT);
  }
  const input = new Uint8Array(1 + leaf.length);
  input.set(leaf, 1);
  return impl(input);
}
