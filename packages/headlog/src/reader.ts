// What a reader can prove (`witnessed-heads.md`): from leaves whose inclusion in a trusted STH it has
// checked (`verifyLoggedLeaves`), that a served record is not cut short (`TruncatedRecord`) and not a
// fork (`ForkedRecord`), and that a reported group omits no logged run (`OmittedRun`). A leaf that is
// not the run's or the group's is `ForeignLeaf`: the log answered about something else.
import { bytesToHex, type Hex, parseHash } from './bytes.js';
import { HeadLogError } from './errors.js';
import { leafHash } from './hash.js';
import { decodeLeaf, type HeadLeaf, idHash } from './leaf.js';
import { verifyInclusion } from './verify.js';

/** A leaf as the log serves it: its bytes, its index and its audit path in one tree head. */
export interface LoggedLeafProof {
  readonly leaf: Uint8Array;
  readonly index: number;
  readonly path: readonly Uint8Array[];
}

export interface IndexedLeaf {
  readonly index: number;
  readonly leaf: HeadLeaf;
}

/** Checks every leaf's inclusion in the tree of `treeSize` with `root`, then decodes it. */
export function verifyLoggedLeaves(
  tree: { treeSize: number; root: Hex },
  proofs: readonly LoggedLeafProof[],
): IndexedLeaf[] {
  const root = parseHash(tree.root);
  if (!root) throw new HeadLogError('MalformedProof', 'the root is not 64 lowercase hex digits');
  return proofs.map((p) => {
    verifyInclusion(leafHash(p.leaf), p.index, tree.treeSize, root, p.path);
    return { index: p.index, leaf: decodeLeaf(p.leaf) };
  });
}

/** A record as it was served: its length and head, and (when the reader has them) its earlier heads. */
export interface ServedRecord {
  readonly length: number;
  readonly head: Hex;
  /** The head after `length` segments, for any length ≤ `length`; checks every logged leaf, not only the last. */
  readonly headAt?: ((length: number) => Hex | undefined) | undefined;
}

/**
 * The served record agrees with the run's logged leaves. In this order: `ForeignLeaf` (a leaf of another
 * tenant or run), `ForkedRecord` (two leaves with one length and two heads, or a leaf whose head differs
 * from the served record's at that length), `TruncatedRecord` (a logged length beyond the served one).
 * A served record longer than every leaf is fine: its later segments are not logged yet.
 */
export function verifyServedRecord(
  run: { tenantId: string; runId: string },
  leaves: readonly IndexedLeaf[],
  served: ServedRecord,
): void {
  const tenantHash = idHash(run.tenantId);
  const runHash = idHash(run.runId);
  const byLength = new Map<number, IndexedLeaf>();
  for (const l of leaves) {
    if (l.leaf.tenantHash !== tenantHash || l.leaf.runHash !== runHash) {
      throw new HeadLogError('ForeignLeaf', `leaf ${l.index} is not a leaf of run ${run.runId}`);
    }
    const seen = byLength.get(l.leaf.length);
    if (seen && seen.leaf.head !== l.leaf.head) {
      throw new HeadLogError(
        'ForkedRecord',
        `leaves ${seen.index} and ${l.index} log two heads at length ${l.leaf.length}`,
      );
    }
    byLength.set(l.leaf.length, l);
  }
  for (const [length, l] of byLength) {
    if (length > served.length) continue;
    const head = length === served.length ? served.head : served.headAt?.(length);
    if (head !== undefined && head !== l.leaf.head) {
      throw new HeadLogError('ForkedRecord', `leaf ${l.index} logs another head at length ${length}`);
    }
  }
  let longest = -1;
  for (const length of byLength.keys()) longest = Math.max(longest, length);
  if (longest > served.length) {
    throw new HeadLogError(
      'TruncatedRecord',
      `the log holds length ${longest}; the served record has ${served.length}`,
    );
  }
}

/** A reported experiment: the group and the runs its report counts. */
export interface GroupReport {
  readonly groupId: string;
  readonly runs: readonly string[];
}

/**
 * Every run the log holds for the group is in the report; else `OmittedRun` (naming the missing runs'
 * hashes: the log names runs only hashed). `ForeignLeaf` for a leaf of another group. Returns the
 * reported runs with no leaf yet (not a failure: a run that has committed no segment is not logged).
 */
export function verifyGroupReport(
  leaves: readonly IndexedLeaf[],
  report: GroupReport,
): { unlogged: string[] } {
  const groupHash = idHash(report.groupId);
  const logged = new Set<Hex>();
  for (const l of leaves) {
    if (l.leaf.groupHash !== groupHash) {
      throw new HeadLogError('ForeignLeaf', `leaf ${l.index} is not a leaf of group ${report.groupId}`);
    }
    logged.add(l.leaf.runHash);
  }
  const reported = new Map(report.runs.map((id) => [idHash(id), id] as const));
  const omitted = [...logged].filter((h) => !reported.has(h)).sort();
  if (omitted.length > 0) {
    throw new HeadLogError('OmittedRun', `the report leaves out logged run(s) ${omitted.join(', ')}`);
  }
  return { unlogged: [...reported].filter(([h]) => !logged.has(h)).map(([, id]) => id) };
}

/** The hash a leaf is logged under, as hex (how proof routes name a leaf). */
export function leafHashHex(leaf: Uint8Array): Hex {
  return bytesToHex(leafHash(leaf));
}
