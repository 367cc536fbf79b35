// The right frontier of a growing tree: the hashes of the perfect subtrees covering [0, size), at most one
// per level, largest first. Appending a leaf hash merges equal-height neighbours (amortised one node hash
// per leaf) and reports every perfect node the append completed, so a store that keeps them can answer
// any later proof (see `plan.ts`). The root of the tree is the frontier folded right to left, which is
// exactly RFC 9162's MTH: its split point is the largest perfect subtree on the left.
import { requireSize } from './bytes.js';
import { HASH_SIZE } from './constants.js';
import { HeadLogError } from './errors.js';
import { EMPTY_ROOT, nodeHash } from './hash.js';
import { frontierNodes, type NodeId } from './shape.js';

/** A node and its hash, as a store keeps it. Nodes are immutable once written. */
export interface StoredNode extends NodeId {
  readonly hash: Uint8Array;
}

export class CompactRange {
  private treeSize: number;
  private readonly hashes: Uint8Array[];
  private readonly levels: number[];

  private constructor(size: number, hashes: Uint8Array[], levels: number[]) {
    this.treeSize = size;
    this.hashes = hashes;
    this.levels = levels;
  }

  /** The range of the empty tree. */
  static empty(): CompactRange {
    return new CompactRange(0, [], []);
  }

  /**
   * The range of a tree of `size` leaves from the hashes of `frontierNodes(size)`, in that order (how a
   * sequencer resumes after a restart: one read of at most 53 nodes).
   */
  static restore(size: number, frontier: readonly Uint8Array[]): CompactRange {
    requireSize(size, 'a restored tree size');
    const ids = frontierNodes(size);
    if (frontier.length !== ids.length || frontier.some((h) => h.length !== HASH_SIZE)) {
      throw new HeadLogError('MissingNode', `a tree of ${size} leaves has ${ids.length} frontier nodes`);
    }
    return new CompactRange(
      size,
      frontier.map((h) => h.slice()),
      ids.map((id) => id.level),
    );
  }

  get size(): number {
    return this.treeSize;
  }

  /** The frontier's hashes, largest subtree first (the order of `frontierNodes(size)`). */
  frontier(): Uint8Array[] {
    return this.hashes.map((h) => h.slice());
  }

  /** Appends one leaf hash; returns the nodes it completed, the leaf (level 0) first. */
  append(leafHash: Uint8Array): StoredNode[] {
    if (leafHash.length !== HASH_SIZE) throw new HeadLogError('OutOfRange', 'a leaf hash is 32 bytes');
    const index = this.treeSize;
    let hash: Uint8Array = leafHash.slice(); // the caller may reuse its buffer
    const completed: StoredNode[] = [{ level: 0, index, hash }];
    let level = 0;
    let position = index; // index of the current node at its level
    while (this.levels.length > 0 && this.levels[this.levels.length - 1] === level) {
      this.levels.pop();
      hash = nodeHash(this.hashes.pop()!, hash);
      level++;
      position = (position - 1) / 2;
      completed.push({ level, index: position, hash });
    }
    this.hashes.push(hash);
    this.levels.push(level);
    this.treeSize = index + 1;
    return completed;
  }

  /** MTH of the tree so far: `H("")` when empty. */
  root(): Uint8Array {
    return foldRight(this.hashes);
  }
}

/** The hash of adjacent perfect subtrees given left to right, folded from the right (the RFC's MTH). */
export function foldRight(hashes: readonly Uint8Array[]): Uint8Array {
  if (hashes.length === 0) return EMPTY_ROOT.slice();
  let acc = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) acc = nodeHash(hashes[i]!, acc);
  return acc;
}
