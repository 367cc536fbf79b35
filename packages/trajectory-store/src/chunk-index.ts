// The index of a live trajectory: one chunk object per accepted append, named so that a listing alone
// rebuilds the index after a restart —
//   chunks/<first offset, 12 digits>-<count>-<first seq>-<last seq>[-k<batch key>].jsonl.gz
// Offsets are positions in the trajectory (0-based, counted in events); seqs are the events' own `seq`,
// strictly increasing across chunks. A chunk is one gzip member holding canonical JSONL lines.

const NAME_RE = /^(\d{12})-(\d+)-(\d+)-(\d+)(?:-k([0-9a-f]{32}))?\.jsonl\.gz$/;

export interface ChunkEntry {
  readonly offset: number;
  readonly count: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly batchKey?: string;
}

export function chunkName(c: ChunkEntry): string {
  const key = c.batchKey ? `-k${c.batchKey}` : '';
  return `${String(c.offset).padStart(12, '0')}-${c.count}-${c.firstSeq}-${c.lastSeq}${key}.jsonl.gz`;
}

export function parseChunkName(name: string): ChunkEntry | null {
  const m = NAME_RE.exec(name);
  if (!m) return null;
  const entry = { offset: Number(m[1]), count: Number(m[2]), firstSeq: Number(m[3]), lastSeq: Number(m[4]) };
  return m[5] ? { ...entry, batchKey: m[5] } : entry;
}

/**
 * The digests of a trajectory written by this process since its first event: BLAKE3 of the canonical JSONL
 * so far and of the stored (gzip) bytes so far, as saved hasher states. The seal then needs no inflating:
 * it checks the stored bytes against `stored` and takes `text` as the trajectory's digest. Absent when the
 * index was rebuilt from storage (a restart, an eviction): the seal then recomputes both from the chunks.
 */
export interface RunningDigests {
  text: Uint8Array | null;
  stored: Uint8Array | null;
  textBytes: number;
}

/** Columns of numbers (not an object per chunk): a live index costs ~32 bytes per append call. */
export class ChunkIndex {
  /** Set on a new, empty trajectory; kept up to date by every append of this process. */
  running: RunningDigests | undefined;

  readonly #offsets: number[] = [];
  readonly #counts: number[] = [];
  readonly #firstSeqs: number[] = [];
  readonly #lastSeqs: number[] = [];
  readonly #keys = new Map<string, number>();
  readonly #keyOf = new Map<number, string>();

  get length(): number {
    return this.#offsets.length;
  }

  get eventCount(): number {
    const n = this.#offsets.length;
    return n === 0 ? 0 : this.#offsets[n - 1]! + this.#counts[n - 1]!;
  }

  /** The last stored seq, or -1 when empty. */
  get lastSeq(): number {
    const n = this.#lastSeqs.length;
    return n === 0 ? -1 : this.#lastSeqs[n - 1]!;
  }

  /** Adds the next chunk; false if it does not continue the index (a gap or an overlap). */
  push(c: ChunkEntry): boolean {
    if (c.offset !== this.eventCount || c.count < 1 || c.firstSeq <= this.lastSeq || c.lastSeq < c.firstSeq)
      return false;
    const i = this.#offsets.length;
    this.#offsets.push(c.offset);
    this.#counts.push(c.count);
    this.#firstSeqs.push(c.firstSeq);
    this.#lastSeqs.push(c.lastSeq);
    if (c.batchKey) {
      this.#keys.set(c.batchKey, i);
      this.#keyOf.set(i, c.batchKey);
    }
    return true;
  }

  at(i: number): ChunkEntry {
    const key = this.#keyOf.get(i);
    const entry = {
      offset: this.#offsets[i]!,
      count: this.#counts[i]!,
      firstSeq: this.#firstSeqs[i]!,
      lastSeq: this.#lastSeqs[i]!,
    };
    return key ? { ...entry, batchKey: key } : entry;
  }

  /** The chunk holding event `offset`, or -1. */
  findOffset(offset: number): number {
    return this.#search(this.#offsets, this.#counts, offset, (i) => this.#offsets[i]!);
  }

  /** The chunk whose seq range covers `seq`, or -1 (a seq in no chunk's range was never stored). */
  findSeq(seq: number): number {
    let lo = 0;
    let hi = this.#lastSeqs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#lastSeqs[mid]! < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return lo < this.#lastSeqs.length && this.#firstSeqs[lo]! <= seq ? lo : -1;
  }

  /** The chunk written for `batchKey`, or -1. */
  findBatch(batchKey: string): number {
    return this.#keys.get(batchKey) ?? -1;
  }

  #search(starts: number[], counts: number[], x: number, startOf: (i: number) => number): number {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (startOf(mid) + counts[mid]! <= x) lo = mid + 1;
      else hi = mid - 1;
    }
    return lo < starts.length && startOf(lo) <= x ? lo : -1;
  }
}
