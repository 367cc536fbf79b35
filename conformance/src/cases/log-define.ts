// How a LOG case is written: the command, an input built from the reference tree (leaves, roots, paths
// and proofs are computed, never typed in), and a hand-stated expectation. The generator
// (generate-log.ts) runs the reference on the input and refuses a case whose expectation it disagrees with.
import { toHex } from '../reference/bytes.js';
import { consistencyProof, LogHasher, mth, path } from '../reference/log-tree.js';
import { LOG_LEAVES } from './log-leaves.js';

export type LogError = 'InclusionFailed' | 'InconsistentLog' | 'MalformedProof';

/** The reference tree over the first leaves of LOG_LEAVES, in hex. */
export class LogFixture {
  private readonly hasher = new LogHasher();
  private readonly hashes = LOG_LEAVES.map((l) => this.hasher.leaf(l));

  leaf(i: number): string {
    return toHex(LOG_LEAVES[i]!);
  }
  leaves(n: number): string[] {
    return LOG_LEAVES.slice(0, n).map(toHex);
  }
  leafHash(i: number): string {
    return toHex(this.hashes[i]!);
  }
  root(n: number): string {
    return toHex(mth(this.hasher, this.hashes.slice(0, n)));
  }
  /** MTH(D[lo:hi]): a node of the tree, for hand-written layouts. */
  node(lo: number, hi: number): string {
    return toHex(mth(this.hasher, this.hashes.slice(lo, hi)));
  }
  path(i: number, n: number): string[] {
    return path(this.hasher, i, this.hashes.slice(0, n)).map(toHex);
  }
  proof(m: number, n: number): string[] {
    return consistencyProof(this.hasher, m, this.hashes.slice(0, n)).map(toHex);
  }
  inclusion(i: number, n: number): Record<string, unknown> {
    return { leaf: this.leaf(i), index: i, tree_size: n, root: this.root(n), path: this.path(i, n) };
  }
  consistency(m: number, n: number): Record<string, unknown> {
    return {
      old_size: m,
      old_root: this.root(m),
      new_size: n,
      new_root: this.root(n),
      proof: this.proof(m, n),
    };
  }
}

export interface LogCase {
  readonly kind: 'log';
  readonly class: 'LOG';
  readonly name: string;
  readonly description: string;
  readonly command: string;
  /** A JSON input built from the fixture, or raw standard input (`{ stdin }`). */
  readonly input: ((f: LogFixture) => unknown) | { readonly stdin: string };
  /** `ok` (exit 0; for log-root the reference's root becomes the expected output), an error (exit 1), or `usage` (exit 2). */
  readonly expect: 'ok' | LogError | 'usage';
  /** For log-root: the tree size it must print. */
  readonly treeSize?: number;
  /** Hand-written preimages; the last one's hash must be the printed root. */
  readonly pinned?: (f: LogFixture) => ReadonlyArray<{ layout: string; preimage_hex: string }>;
}

/** Flips the lowest bit of a hex string's last byte. */
export function flipHex(hex: string): string {
  const last = Number.parseInt(hex.slice(-2), 16) ^ 1;
  return hex.slice(0, -2) + last.toString(16).padStart(2, '0');
}
