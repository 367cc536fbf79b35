// One sequencing pass (issue 18 §2): under the sequencer's advisory lock (one replica at a time, per
// transaction), move the visible pending leaves into the tree with dense indexes, write the perfect nodes
// each append completed, and — every `sthIntervalMs` while leaves arrive, or on the first start — sign a
// tree head over the new size. All in one transaction: a crash leaves either the whole pass or none of it,
// and pending rows stay pending until a pass commits them. A pending row that commits after a pass read
// the table is simply taken by the next pass, so indexes follow commit order across passes.
import {
  bytesToHex,
  CompactRange,
  encodeLeaf,
  frontierNodes,
  type KeyPair,
  leafFor,
  leafHash,
  type SignedTreeHead,
  type StoredNode,
  signTreeHead,
} from '@everdict/headlog';
import type { Db, Executor } from '../db/tx.js';
import { readForPass, readNodes, type SequencedLeaf, tryLockSequencer, writePass } from './store.js';

export interface SequencerOptions {
  key: KeyPair;
  /** Sign a tree head at most this often while leaves arrive (EVERDICT_STH_INTERVAL_MS; default 2,000). */
  sthIntervalMs: number;
  /** Pending leaves taken per pass (the rest wait for the next pass, which follows at once). */
  batch: number;
  clock: () => number;
}

export interface PassResult {
  /** False when another replica holds the sequencer's lock (nothing was done). */
  locked: boolean;
  sequenced: number;
  size: number;
  signed: SignedTreeHead | null;
  /** More pending leaves than one batch: run another pass now. */
  more: boolean;
  /** Nothing left to do: no leaf was pending and the latest signed head covers the whole tree. */
  settled: boolean;
}

export class Sequencer {
  /** The frontier of the last committed pass (restored from the nodes whenever the size moved under us). */
  private range: CompactRange | null = null;

  constructor(private readonly o: SequencerOptions) {}

  /** Drops the cached frontier: the next pass restores it from the stored nodes. */
  forget(): void {
    this.range = null;
  }

  /** One pass. `forceSign` signs a tree head over the new size even inside the interval (tests, shutdown). */
  async pass(db: Db, opts: { forceSign?: boolean } = {}): Promise<PassResult> {
    try {
      return await db.transaction().execute(async (tx) => {
        if (!(await tryLockSequencer(tx)))
          return { locked: false, sequenced: 0, size: 0, signed: null, more: false, settled: false };
        // The tree's size, the newest STH and the pending leaves: one statement (its snapshot is after the lock).
        const { size, last, pending } = await readForPass(tx, this.o.batch);
        const range = await this.rangeAt(tx, size);
        const now = this.o.clock();
        const leaves: SequencedLeaf[] = [];
        const nodes: StoredNode[] = [];
        for (const p of pending) {
          const leaf = encodeLeaf(
            leafFor({
              tenantId: p.tenantId,
              runId: p.runId,
              groupId: p.groupId,
              length: p.length,
              head: p.head,
              loggedMs: now,
            }),
          );
          const index = range.size;
          nodes.push(...range.append(leafHash(leaf)));
          leaves.push({
            index,
            leaf,
            tenantId: p.tenantId,
            runId: p.runId,
            groupId: p.groupId,
            length: p.length,
          });
        }
        let signed: SignedTreeHead | null = null;
        const due =
          last === undefined ||
          (range.size > last.treeSize && (opts.forceSign || now - last.timestampMs >= this.o.sthIntervalMs));
        if (due) {
          signed = signTreeHead(
            {
              treeSize: range.size,
              root: bytesToHex(range.root()),
              timestampMs: Math.max(now, last?.timestampMs ?? 0),
            },
            this.o.key,
          );
        }
        // The leaves, their nodes, their pending rows' removal and the due tree head: one statement.
        if (leaves.length > 0 || signed)
          await writePass(
            tx,
            pending.map((p) => p.id),
            leaves,
            nodes,
            signed,
          );
        this.range = range;
        return {
          locked: true,
          sequenced: leaves.length,
          size: range.size,
          signed,
          more: pending.length >= this.o.batch,
          settled: leaves.length === 0 && range.size <= (signed ?? last)!.treeSize,
        };
      });
    } catch (e) {
      this.range = null; // the pass rolled back: the cached frontier may be ahead of the database
      throw e;
    }
  }

  /** A working copy of the frontier at `size` (never the cached one itself: a rollback must not move it). */
  private async rangeAt(tx: Executor, size: number): Promise<CompactRange> {
    if (this.range && this.range.size === size) return CompactRange.restore(size, this.range.frontier());
    const hashes = await readNodes(tx, frontierNodes(size));
    if (hashes.some((h) => h === undefined))
      throw new Error(`head log: the stored nodes do not cover a tree of ${size} leaves`);
    return CompactRange.restore(size, hashes as Uint8Array[]);
  }
}
