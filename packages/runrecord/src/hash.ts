// The BLAKE3 seam. Two backends compute the same function: hash-wasm (a reused WebAssembly hasher,
// ~9× faster for the 60–200-byte inputs a chain hashes) and @noble/hashes (pure JS, no WebAssembly).
// The WebAssembly module is compiled once, by a top-level await when this module loads, so every
// public function stays synchronous. If WebAssembly is unavailable the package falls back to noble.
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { createBLAKE3, type IHasher } from 'hash-wasm';
import { RunRecordError } from './errors.js';

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

function nobleHash(data: Uint8Array): Uint8Array {
  return nobleBlake3(data);
}

let current: HashBackendName = wasmHasher ? 'hash-wasm' : 'noble';
let impl: (data: Uint8Array) => Uint8Array = wasmHasher ? wasmHash : nobleHash;

/** BLAKE3-256 of `data` (32 bytes, no key, no context), with the selected backend. */
export function blake3(data: Uint8Array): Uint8Array {
  return impl(data);
}

/** BLAKE3-256 with a named backend, whatever is selected (for benchmarks and cross-checks). */
export function blake3With(backend: HashBackendName, data: Uint8Array): Uint8Array {
  if (backend === 'noble') return nobleHash(data);
  if (!wasmHasher) throw new RunRecordError('BackendUnavailable', 'hash-wasm needs WebAssembly');
  return wasmHash(data);
}

export function hashBackend(): HashBackendName {
  return current;
}

export function availableHashBackends(): HashBackendName[] {
  return wasmHasher ? ['hash-wasm', 'noble'] : ['noble'];
}

/** Selects the backend for every later hash. Both produce identical digests. */
export function setHashBackend(name: HashBackendName): void {
  if (name === 'hash-wasm' && !wasmHasher)
    throw new RunRecordError('BackendUnavailable', 'hash-wasm needs WebAssembly');
  current = name;
  impl = name === 'hash-wasm' ? wasmHash : nobleHash;
}
