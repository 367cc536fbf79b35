// Cascade cancellation: the causal tree is the kill switch. Pure: given parent→children edges, statuses
// and a per-cause (and per-kind) opt-out, the set of runs to cancel.
import { isTerminalStatus, type RunCause, type RunKind, type RunStatus } from '@everdict/run-model';
import type { CascadePolicy } from './policy.js';

export interface CausalNode {
  readonly runId: string;
  readonly causedByRunId: string | null;
  readonly status: RunStatus;
  readonly cause: RunCause;
  readonly kind: RunKind;
}

export interface CascadeOptOut {
  /** Descendants with one of these causes survive, and so does everything they caused. */
  readonly causes?: readonly RunCause[];
  /** Same, by kind. */
  readonly kinds?: readonly RunKind[];
}

/** A tenant's cascade policy (`TenantPolicy.cascade`) as the kernel's opt-out. */
export function cascadeOptOut(policy: CascadePolicy): CascadeOptOut {
  return { kinds: policy.skipKinds, causes: policy.skipCauses };
}

/**
 * The non-terminal descendants of `rootRunId` to cancel (the root itself is the caller's to cancel).
 * The walk passes through terminal runs — a finished agent run's children are still its work — but
 * never cancels them: finished work is never retro-cancelled. An opted-out descendant is not cancelled
 * and its subtree is not entered (a surviving run keeps the work it caused). Cycles are tolerated.
 */
export function cascade(
  nodes: Iterable<CausalNode>,
  rootRunId: string,
  optOut: CascadeOptOut = {},
): string[] {
  const children = new Map<string, CausalNode[]>();
  for (const node of nodes) {
    if (node.causedByRunId === null) continue;
    const siblings = children.get(node.causedByRunId);
    if (siblings) siblings.push(node);
    else children.set(node.causedByRunId, [node]);
  }
  const causes = new Set(optOut.causes ?? []);
  const kinds = new Set(optOut.kinds ?? []);
  const cancel: string[] = [];
  const seen = new Set<string>([rootRunId]);
  const stack = [rootRunId];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      if (seen.has(child.runId)) continue;
      seen.add(child.runId);
      if (causes.has(child.cause) || kinds.has(child.kind)) continue;
      if (!isTerminalStatus(child.status)) cancel.push(child.runId);
      stack.push(child.runId);
    }
  }
  return cancel;
}

/**
 * The gate's half of the kill switch (rule `causer_cancelled`): the cancelled run whose cascade covers a
 * new run caused by `causer`, or null when the new run may be admitted. The same reach as `cascade`: walking
 * up from the causer (`ancestors`: its causer first, up to the tree's root), a cancelled run revokes, an
 * opted-out run stops the walk (a cascade from above would not enter it), and a new run that is itself
 * opted out (its `cause` or `kind`) would survive a cascade, so nothing revokes it. A cancelled run causes
 * nothing, whatever cancelled it; a finished (succeeded, failed) causer still may — a subscription answers
 * its settle — unless a cancelled ancestor's cascade reaches through it.
 */
export function revokedBy(
  causer: CausalNode,
  ancestors: readonly CausalNode[],
  child: { readonly cause: RunCause; readonly kind: RunKind },
  optOut: CascadeOptOut = {},
): string | null {
  const causes = new Set(optOut.causes ?? []);
  const kinds = new Set(optOut.kinds ?? []);
  const skipped = (n: { cause: RunCause; kind: RunKind }) => causes.has(n.cause) || kinds.has(n.kind);
  if (skipped(child)) return null;
  for (const node of [causer, ...ancestors]) {
    if (node.status === 'cancelled') return node.runId;
    if (skipped(node)) return null;
  }
  return null;
}
