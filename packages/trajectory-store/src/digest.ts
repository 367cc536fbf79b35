// BLAKE3-256 digests in their public form `blake3:<64 lowercase hex>`, computed incrementally (a sealed
// trajectory or an artifact is hashed as it streams, never held whole).
import { createBLAKE3, type IHasher } from 'hash-wasm';

export const DIGEST_PREFIX = 'blake3:';
const DIGEST_RE = /^blake3:[0-9a-f]{64}$/;

export type Digest = `blake3:${string}`;

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && DIGEST_RE.test(value);
}

/** Digests given back (`release`), reset when taken again: a WebAssembly instance is ≈ 0.2 ms to make. */
const spares: StreamingDigest[] = [];
const MAX_SPARES = 64;

/** An incremental BLAKE3 hasher (each call owns a fresh WebAssembly instance: hashes may interleave). */
export class StreamingDigest {
  #hasher: IHasher;
  #bytes = 0;
  /** Among the spares: a second `release` before the next `take` is ignored (never shared by two callers). */
  #spare = false;

  private constructor(hasher: IHasher) {
    this.#hasher = hasher;
  }

  static async create(): Promise<StreamingDigest> {
    const hasher = await createBLAKE3(256);
    hasher.init();
    return new StreamingDigest(hasher);
  }

  /**
   * A digest from the spares (reset), or a new one. Give it back with `release()` once its result is read —
   * or never: a digest whose hashing failed midway is simply dropped.
   */
  static async take(): Promise<StreamingDigest> {
    const spare = spares.pop();
    if (!spare) return StreamingDigest.create();
    spare.#spare = false;
    spare.reset();
    return spare;
  }

  /** Back to the spares (at most 64 kept) for a later `take`: the caller does not touch it again. */
  release(): void {
    if (this.#spare || spares.length >= MAX_SPARES) return;
    this.#spare = true;
    spares.push(this);
  }

  update(bytes: Uint8Array | string): void {
    this.#hasher.update(bytes);
    this.#bytes += typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength;
  }

  /** Starts over (the instance is reused). */
  reset(): void {
    this.#hasher.init();
    this.#bytes = 0;
  }

  /** Bytes hashed so far. */
  get bytes(): number {
    return this.#bytes;
  }

  digest(): Digest {
    return `${DIGEST_PREFIX}${this.#hasher.digest('hex')}` as Digest;
  }
}

/** The digest of one byte string. */
export async function digestOf(bytes: Uint8Array | string): Promise<Digest> {
  const h = await StreamingDigest.create();
  h.update(bytes);
  return h.digest();
}

/**
 * Digests carried across appends as saved hasher states (~1.9 KB each) rather than live hashers: one shared
 * hasher loads a state, takes the new bytes, and saves it again — cheap, and nothing per trajectory but bytes.
 */
const shared: IHasher = await createBLAKE3(256);

export function extendDigest(state: Uint8Array | null, bytes: Uint8Array): Uint8Array {
  if (state) shared.load(state);
  else shared.init();
  shared.update(bytes);
  return shared.save();
}

export function finishDigest(state: Uint8Array | null): Digest {
  if (state) shared.load(state);
  else shared.init();
  return `${DIGEST_PREFIX}${shared.digest('hex')}` as Digest;
}
