// An in-memory log for tests, built only from this package's tree, leaf and STH functions: leaves in
// acceptance order, a `MemoryTree`, the STHs it signed (by size) and the cosignatures it accepted. Honest by
// default; `rewrite` and `forkAt` stage the attacks a dishonest log would make.
import { bytesToHex, type Hex } from '../bytes.js';
import { HeadLogError } from '../errors.js';
import { decodeLeaf, encodeLeaf, type HeadLeaf, idHash, leafFor, type SegmentHead } from '../leaf.js';
import { MemoryTree } from '../memory-tree.js';
import type { KeyPair } from '../signing.js';
import {
  type Cosignature,
  countWitnesses,
  type SignedTreeHead,
  signTreeHead,
  verifyCosignature,
} from '../tree-head.js';

export class TestLog {
  private tree = new MemoryTree();
  private leaves: Uint8Array[] = [];
  private readonly sths = new Map<number, SignedTreeHead>();
  private readonly cosigs = new Map<number, Cosignature[]>();
  private clock = 1_000;

  constructor(
    readonly key: KeyPair,
    /** Witness public keys (hex) whose cosignatures the log accepts. */
    readonly witnessKeys: readonly Hex[] = [],
  ) {}

  get size(): number {
    return this.tree.size;
  }

  /** Appends the leaf of a committed segment; returns its index. `loggedMs` defaults to a test clock. */
  append(segment: Omit<SegmentHead, 'loggedMs'> & { loggedMs?: number }): number {
    const leaf = encodeLeaf(leafFor({ ...segment, loggedMs: segment.loggedMs ?? this.clock++ }));
    this.leaves.push(leaf);
    return this.tree.appendLeaf(leaf);
  }

  /** Signs an STH over the current tree and keeps it. */
  publish(timestampMs: number = this.clock++): SignedTreeHead {
    const sth = signTreeHead(
      { treeSize: this.tree.size, root: bytesToHex(this.tree.root()), timestampMs },
      this.key,
    );
    this.sths.set(sth.treeSize, sth);
    this.cosigs.set(sth.treeSize, []);
    return sth;
  }

  latest(): SignedTreeHead | undefined {
    let best: SignedTreeHead | undefined;
    for (const s of this.sths.values()) if (!best || s.treeSize >= best.treeSize) best = s;
    return best;
  }

  sthAt(size: number): SignedTreeHead | undefined {
    return this.sths.get(size);
  }

  cosignaturesOf(size: number): Cosignature[] {
    return [...(this.cosigs.get(size) ?? [])];
  }

  /**
   * Keeps a cosignature over the STH the log signed at that size: the STH must be exactly the stored one,
   * the witness trusted and the signature valid. Returns how many distinct trusted cosignatures it holds.
   */
  addCosignature(sth: SignedTreeHead, c: Cosignature): number {
    const stored = this.sths.get(sth.treeSize);
    if (!stored || stored.root !== sth.root || stored.signature !== sth.signature) {
      throw new HeadLogError('MalformedTreeHead', `the log signed no such tree head at size ${sth.treeSize}`);
    }
    if (!this.witnessKeys.includes(c.witness)) {
      throw new HeadLogError('InvalidKey', 'not a witness this log accepts cosignatures from');
    }
    if (!verifyCosignature(stored, c))
      throw new HeadLogError('BadSignature', 'the cosignature does not verify');
    const list = this.cosigs.get(sth.treeSize) ?? [];
    if (!list.some((x) => x.witness === c.witness)) list.push(c);
    this.cosigs.set(sth.treeSize, list);
    return countWitnesses(stored, list, this.witnessKeys);
  }

  inclusionProof(index: number, size: number): Uint8Array[] {
    return this.tree.inclusionProof(index, size);
  }

  consistencyProof(from: number, to: number): Uint8Array[] {
    return this.tree.consistencyProof(from, to);
  }

  rootAt(size: number): Uint8Array {
    return this.tree.rootAt(size);
  }

  leafAt(index: number): Uint8Array {
    const l = this.leaves[index];
    if (!l) throw new HeadLogError('OutOfRange', `no leaf ${index}`);
    return l;
  }

  /** Indexes of the leaves in the first `size` that match. */
  find(size: number, match: (leaf: HeadLeaf) => boolean): number[] {
    const out: number[] = [];
    for (let i = 0; i < Math.min(size, this.leaves.length); i++)
      if (match(decodeLeaf(this.leaves[i]!))) out.push(i);
    return out;
  }

  /** Indexes of a run's leaves in the first `size`. */
  runLeaves(tenantId: string, runId: string, size: number): number[] {
    const t = idHash(tenantId);
    const r = idHash(runId);
    return this.find(size, (l) => l.tenantHash === t && l.runHash === r);
  }

  /** Indexes of a group's leaves in the first `size` (a tenant's groups only). */
  groupLeaves(tenantId: string, groupId: string, size: number): number[] {
    const t = idHash(tenantId);
    const g = idHash(groupId);
    return this.find(size, (l) => l.tenantHash === t && l.groupHash === g);
  }

  /** A copy of this log (leaves, STHs, cosignatures): the starting point of a fork. */
  clone(): TestLog {
    const copy = new TestLog(this.key, this.witnessKeys);
    for (const leaf of this.leaves) {
      copy.leaves.push(leaf);
      copy.tree.appendLeaf(leaf);
    }
    for (const [n, s] of this.sths) copy.sths.set(n, s);
    for (const [n, c] of this.cosigs) copy.cosigs.set(n, [...c]);
    copy.clock = this.clock;
    return copy;
  }

  /**
   * Attack: the log rewrites leaf `index` (the segment it names instead) and re-signs every STH it kept
   * that covers it, dropping their cosignatures — a history no earlier reader saw.
   */
  rewrite(index: number, segment: SegmentHead): void {
    this.leaves[index] = encodeLeaf(leafFor(segment));
    this.tree = new MemoryTree();
    for (const leaf of this.leaves) this.tree.appendLeaf(leaf);
    for (const [n, s] of [...this.sths]) {
      if (n <= index) continue;
      this.sths.set(
        n,
        signTreeHead(
          { treeSize: n, root: bytesToHex(this.tree.rootAt(n)), timestampMs: s.timestampMs },
          this.key,
        ),
      );
      this.cosigs.set(n, []);
    }
  }

  /** Attack: a second continuation — this log's first `size` leaves and the STHs up to it, then its own. */
  forkAt(size: number): TestLog {
    const fork = new TestLog(this.key, this.witnessKeys);
    for (const leaf of this.leaves.slice(0, size)) {
      fork.leaves.push(leaf);
      fork.tree.appendLeaf(leaf);
    }
    for (const [n, s] of this.sths) if (n <= size) fork.sths.set(n, s);
    for (const [n, c] of this.cosigs) if (n <= size) fork.cosigs.set(n, [...c]);
    fork.clock = this.clock;
    return fork;
  }
}
