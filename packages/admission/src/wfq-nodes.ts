// The WFQ's node table: a queued entry is a number (0, 1, 2, …) indexing these typed-array columns, not
// an object, so a million queued entries put nothing on the GC-managed heap. The owner allocates numbers
// (and may reuse freed ones) and writes enqueuedAt and lane; the queue writes finish, seq and removed.
// A subclass adds its own columns by overriding `resize`.

export class WfqNodes {
  enqueuedAt = new Float64Array(0);
  /** 0 interactive, 1 background, 2 batch. */
  lane = new Uint8Array(0);
  finish = new Float64Array(0);
  seq = new Float64Array(0);
  /** 1 once taken out of the queue while still in its FIFO (lazy removal). */
  removed = new Uint8Array(0);
  private used = 0;
  private readonly free: number[] = [];

  /** Columns are allocated on the first `alloc` (a subclass's columns exist only after its constructor). */
  constructor(private readonly initialCapacity = 64) {}

  get capacity(): number {
    return this.lane.length;
  }

  /** A fresh node number (a freed one if any). */
  alloc(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    if (this.used === this.capacity) this.resize(Math.max(this.initialCapacity, this.capacity * 2));
    return this.used++;
  }

  /** Give `n` back: it must be in no FIFO any more. */
  release(n: number): void {
    this.free.push(n);
  }

  /** Grow every column to `capacity`, keeping the values. Subclasses grow theirs, then call this. */
  protected resize(capacity: number): void {
    this.enqueuedAt = grown(this.enqueuedAt, capacity);
    this.lane = grown(this.lane, capacity);
    this.finish = grown(this.finish, capacity);
    this.seq = grown(this.seq, capacity);
    this.removed = grown(this.removed, capacity);
  }
}

type Column = Float64Array | Int32Array | Uint8Array | Uint16Array;

/** A copy of `a` with room for `capacity` entries (zero-filled past the old end). */
export function grown<A extends Column>(a: A, capacity: number): A {
  const next = new (a.constructor as new (n: number) => A)(capacity);
  next.set(a);
  return next;
}
