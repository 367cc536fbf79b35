// A FIFO with lazy removal: removed entries are skipped when they reach the head. O(1) amortized.

export interface Removable {
  removed: boolean;
}

export class Fifo<T extends Removable> {
  private items: T[] = [];
  private head = 0;

  /** The first live entry. */
  peek(): T | undefined {
    while (this.head < this.items.length && this.items[this.head]!.removed) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head];
  }

  shift(): T | undefined {
    const entry = this.peek();
    if (entry) this.head++;
    return entry;
  }

  push(entry: T): void {
    this.items.push(entry);
  }
}
