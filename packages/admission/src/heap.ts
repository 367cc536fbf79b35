// A heap keyed by arbitrary keys (the memory store's running/session ends, keyed by sparse row numbers):
// the one heap, IdHeap, over dense slot numbers — each live key borrows a small number (freed on delete),
// so the position index stays as small as the heap however large the keys are.
import { IdHeap } from './id-heap.js';

export class IndexedHeap<K> {
  private readonly heap = new IdHeap();
  private readonly slot = new Map<K, number>();
  /** Each slot number's key (undefined while free). */
  private readonly keys: (K | undefined)[] = [];
  private readonly free: number[] = [];

  get size(): number {
    return this.heap.size;
  }

  has(key: K): boolean {
    return this.slot.has(key);
  }

  /** The key with the least priority, without removing it. */
  peek(): K | undefined {
    const id = this.heap.peek();
    return id < 0 ? undefined : this.keys[id];
  }

  /** The least priority's first component. */
  peekPriority(): number | undefined {
    return this.heap.size > 0 ? this.heap.peekA() : undefined;
  }

  /** Insert `key`, or move it to its new priority. */
  set(key: K, a: number, b: number): void {
    let id = this.slot.get(key);
    if (id === undefined) {
      id = this.free.pop() ?? this.keys.length;
      this.slot.set(key, id);
      this.keys[id] = key;
    }
    this.heap.set(id, a, b);
  }

  delete(key: K): boolean {
    const id = this.slot.get(key);
    if (id === undefined) return false;
    this.heap.delete(id);
    this.slot.delete(key);
    this.keys[id] = undefined;
    this.free.push(id);
    return true;
  }

  pop(): K | undefined {
    const top = this.peek();
    if (top !== undefined) this.delete(top);
    return top;
  }
}
