// Proofs from stored nodes in O(log n) reads, in two steps so that a store answers them in one batch:
// `plan…` names the perfect nodes a proof needs (pure arithmetic), the store reads them, `assemble`
// folds each ragged right-edge span and returns the proof in the RFC's order. Every node a plan names is
// complete in any tree that contains the span, so proofs for any past tree size come from the same
// write-once store.

import { isSize } from './bytes.js';
import { foldRight } from './compact-range.js';
import { HASH_SIZE } from './constants.js';
import { HeadLogError } from './errors.js';
import {
  consistencySpans,
  frontierNodes,
  inclusionSpans,
  type NodeId,
  type Span,
  spanNodes,
} from './shape.js';

/** What a store must read for one proof (or root), and how to turn what it read into the result. */
export interface ProofPlan {
  /** The nodes to read, in this order; at most 2·log2(size) + 2 of them. */
  readonly nodes: readonly NodeId[];
  /** The proof elements from the nodes' hashes, given in the order of `nodes`. */
  assemble(hashes: readonly Uint8Array[]): Uint8Array[];
}

/** Reads nodes by id, in order (an in-memory tree, or a batch query against stored interior hashes). */
export type NodeReader = (nodes: readonly NodeId[]) => readonly Uint8Array[];

function planSpans(spans: readonly Span[]): ProofPlan {
  const groups = spans.map(spanNodes);
  const nodes = groups.flat();
  return {
    nodes,
    assemble(hashes) {
      if (hashes.length !== nodes.length || hashes.some((h) => h?.length !== HASH_SIZE)) {
        throw new HeadLogError('MissingNode', `the plan needs ${nodes.length} 32-byte node hashes`);
      }
      let at = 0;
      return groups.map((g) => {
        const part = hashes.slice(at, at + g.length);
        at += g.length;
        return part.length === 1 ? part[0]!.slice() : foldRight(part);
      });
    },
  };
}

function checkSizes(a: unknown, b: unknown): void {
  if (!isSize(a) || !isSize(b)) throw new HeadLogError('OutOfRange', 'sizes are non-negative safe integers');
}

/** The audit path of leaf `index` in the tree of `size` leaves. `OutOfRange` unless index < size. */
export function planInclusionProof(index: number, size: number): ProofPlan {
  checkSizes(index, size);
  if (index >= size) throw new HeadLogError('OutOfRange', `leaf ${index} is not in a tree of ${size}`);
  return planSpans(inclusionSpans(index, size));
}

/** The consistency proof from `oldSize` to `size` (empty when old is 0 or equals size). `OutOfRange` if old > size. */
export function planConsistencyProof(oldSize: number, size: number): ProofPlan {
  checkSizes(oldSize, size);
  if (oldSize > size) throw new HeadLogError('OutOfRange', `a tree of ${oldSize} does not precede ${size}`);
  if (oldSize === 0 || oldSize === size) return planSpans([]);
  return planSpans(consistencySpans(oldSize, size));
}

/** The root of the tree's first `size` leaves (one element; `H("")` for 0). */
export function planRoot(size: number): ProofPlan {
  checkSizes(size, size);
  const nodes = frontierNodes(size);
  return {
    nodes,
    assemble(hashes) {
      if (hashes.length !== nodes.length || hashes.some((h) => h?.length !== HASH_SIZE)) {
        throw new HeadLogError('MissingNode', `the plan needs ${nodes.length} 32-byte node hashes`);
      }
      return [foldRight(hashes)];
    },
  };
}

/** Runs a plan against a synchronous reader. */
export function runPlan(plan: ProofPlan, read: NodeReader): Uint8Array[] {
  return plan.assemble(read(plan.nodes));
}
