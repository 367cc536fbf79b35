// An in-memory log over the same write-once node layout a database keeps: every perfect node by
// (level, index), extended through a compact range, proofs through the same plans. For tests, witnesses
// and tools; the control plane stores the nodes `append` returns and runs the plans against its tables.
import { CompactRange, type StoredNode } from './compact-range.js';
import { HeadLogError } from './errors.js';
import { leafHash } from './hash.js';
import { type ProofPlan, planConsistencyProof, planInclusionProof, planRoot } from './plan.js';
import type { NodeId } from './shape.js';

export class MemoryTree {
  private readonly range = CompactRange.empty();
  /** levels[l]: the perfect nodes of height l, 32 bytes each, by index (one growable buffer per level). */
  private readonly levels: Uint8Array[] = [];
  private readonly counts: number[] = [];

  get size(): number {
    return this.range.size;
  }

  /** Appends a leaf's bytes; returns its index. */
  appendLeaf(leaf: Uint8Array): number {
    return this.appendHash(leafHash(leaf));
  }

  /** Appends a leaf hash; returns its index. */
  appendHash(hash: Uint8Array): number {
    const index = this.range.size;
    for (const node of this.range.append(hash)) this.store(node);
    return index;
  }

  private store(node: StoredNode): void {
    let buf = this.levels[node.level] ?? new Uint8Array(32 * 64);
    if ((node.index + 1) * 32 > buf.length) {
      const grown = new Uint8Array(buf.length * 2);
      grown.set(buf);
      buf = grown;
    }
    this.levels[node.level] = buf;
    buf.set(node.hash, node.index * 32);
    this.counts[node.level] = node.index + 1;
  }

  /** Copies of the stored hashes of `nodes`, in order (`MissingNode` for a node not yet complete). */
  readNodes = (nodes: readonly NodeId[]): Uint8Array[] =>
    nodes.map(({ level, index }) => {
      if (!(index < (this.counts[level] ?? 0))) {
        throw new HeadLogError('MissingNode', `node (${level}, ${index}) is not complete`);
      }
      return this.levels[level]!.slice(index * 32, index * 32 + 32);
    });

  private run(plan: ProofPlan): Uint8Array[] {
    return plan.assemble(this.readNodes(plan.nodes));
  }

  /** The current root (kept by the compact range, no reads). */
  root(): Uint8Array {
    return this.range.root();
  }

  /** The root of the first `size` leaves. */
  rootAt(size: number): Uint8Array {
    if (size > this.size) throw new HeadLogError('OutOfRange', `the tree has ${this.size} leaves`);
    return this.run(planRoot(size))[0]!;
  }

  /** The audit path of leaf `index` in the tree of its first `size` leaves (default: all). */
  inclusionProof(index: number, size = this.size): Uint8Array[] {
    if (size > this.size) throw new HeadLogError('OutOfRange', `the tree has ${this.size} leaves`);
    return this.run(planInclusionProof(index, size));
  }

  /** The consistency proof from the first `oldSize` leaves to the first `size` (default: all). */
  consistencyProof(oldSize: number, size = this.size): Uint8Array[] {
    if (size > this.size) throw new HeadLogError('OutOfRange', `the tree has ${this.size} leaves`);
    return this.run(planConsistencyProof(oldSize, size));
  }
}

/** MTH of leaves given as bytes (RFC 9162 §2.1.1 with the spec's BLAKE3): `H("")` for none. */
export function treeRoot(leaves: readonly Uint8Array[]): Uint8Array {
  const range = CompactRange.empty();
  for (const leaf of leaves) range.append(leafHash(leaf));
  return range.root();
}
