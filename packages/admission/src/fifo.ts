// A FIFO ring buffer with lazy removal: a removed entry is skipped when it reaches the head, and served
// slots are cleared at once, so the buffer holds nothing dead beyond the removed entries still queued —
// and those are compacted away once they outnumber the live ones. O(1) amortized per operation.

export interface Removable {
  removed: boolean;
}

export class Fifo<T extends Removable> {
  private items: (T | undefined)[] = [];
  private head = 0;
  /** Entries in the buffer, removed ones included. */
  private count = 0;
  /** Removed entries still in the buffer (as told by `noteRemoved`). */
  private dead = 0;

  /** The first live entry. */
  peek(): T | undefined {
    while (this.count > 0) {
      const entry = this.items[this.head]!;
      if (!entry.removed) return entry;
      this.drop();
      if (this.dead > 0) this.dead--;
    }
    return undefined;
  }

  shift(): T | undefined {
    const entry = this.peek();
    if (entry) this.drop();
    return entry;
  }

  push(entry: T): void {
    if (this.count === this.items.length) this.rebuild(Math.max(4, this.items.length * 2));
    this.items[(this.head + this.count) & (this.items.length - 1)] = entry;
    this.count++;
  }

  /** An entry of this buffer was marked removed: compact once the dead outnumber the live. */
  noteRemoved(): void {
    this.dead++;
    if (this.dead > 16 && this.dead * 2 > this.count) this.rebuild(this.items.length);
  }

  private drop(): void {
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    this.count--;
  }

  /** Copy the live entries, in order, into a buffer of `capacity` (a power of two). */
  private rebuild(capacity: number): void {
    const next: (T | undefined)[] = [];
    const mask = this.items.length - 1;
    for (let i = 0; i < this.count; i++) {
      const entry = this.items[(this.head + i) & mask]!;
      if (!entry.removed) next.push(entry);
    }
    this.count = next.length;
    this.dead = 0;
    while (next.length < capacity) next.push(undefined);
    this.items = next;
    this.head = 0;
  }
}
