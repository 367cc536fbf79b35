// Implementations the LOG class must fail: the reference with one rule of the spec broken each.
import type { LogDefects } from './log-tree.js';

export const LOG_MUTANTS = {
  /** SHA-256 in place of BLAKE3. */
  sha256: { sha256: true },
  /** Leaves hashed without the 0x00 prefix (second-preimage protection gone). */
  'no-leaf-prefix': { noLeafPrefix: true },
  /** Proofs from a power-of-two old size expected to repeat the old root. */
  'repeat-old-root': { repeatOldRoot: true },
  /** index ≥ tree_size accepted and hashed on. */
  'index-beyond-size': { indexBeyondSize: true },
  /** A proof of the wrong length reported as a hash mismatch, not MalformedProof. */
  'shape-as-mismatch': { shapeAsMismatch: true },
  /** Unknown input fields accepted. */
  'lenient-fields': { lenientFields: true },
  /** log-root prints tree_size as a number. */
  'size-as-number': { sizeAsNumber: true },
  /** The empty tree's root taken as 32 zero bytes. */
  'empty-root-zeros': { emptyRootZeros: true },
} as const satisfies Record<string, LogDefects>;

export type LogMutantName = keyof typeof LOG_MUTANTS;

export function isLogMutant(name: string): name is LogMutantName {
  return Object.hasOwn(LOG_MUTANTS, name);
}
