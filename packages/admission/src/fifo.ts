// A FIFO ring buffer of node numbers with lazy removal: a removed node (its `removed` column set) is
// skipped when it reaches the head, and those still queued are compacted away once they outnumber the
// live ones. O(1) amortized per operation; the ring is one Int32Array, nothing per entry on the heap.
import type { WfqNodes } from './wfq-nodes.js';

export class Fifo {
  private items = new Int32Array(4);
  private head = 0;
  /** Entries in the buffer, removed ones included. */
  private count = 0;
  /** Removed entries still in the buffer (as told by `noteRemoved`). */
  private dead = 0;

  constructor(private readonly nodes: WfqNodes) {}

  /** The first live node, or -1. */
  peek(): number {
    const removed = this.nodes.removed;
    while (this.count > 0) {
      const n = this.items[this.head]!;
      if (removed[n] === 0) return n;
      this.drop();
      if (this.dead > 0) this.dead--;
    }
    return -1;
  }

  shift(): number {
    const n = this.peek();
    if (n >= 0) this.drop();
    return n;
  }

  push(n: number): void {
    if (this.count === this.items.length) this.rebuild(this.items.length * 2);
    this.items[(this.head + this.count) & (this.items.length - 1)] = n;
    this.count++;
  }

  /** A node of this buffer was marked removed: compact once the dead outnumber the live. */
  noteRemoved(): void {
    this.dead++;
    if (this.dead > 16 && this.dead * 2 > this.count) this.rebuild(this.items.length);
  }

  private drop(): void {
    this.head = (this.head + 1) & (this.items.length - 1);
    this.count--;
  }

  /** Copy the live entries, in order, into a buffer of `capacity` (a power of two). */
  private rebuild(capacity: number): void {
    const next = new Int32Array(capacity);
    const mask = this.items.length - 1;
    const removed = this.nodes.removed;
    let live = 0;
    for (let i = 0; i < this.count; i++) {
      const n = this.items[(this.head + i) & mask]!;
      if (removed[n] === 0) next[live++] = n;
    }
    this.count = live;
    this.dead = 0;
    this.items = next;
    this.head = 0;
  }
}
