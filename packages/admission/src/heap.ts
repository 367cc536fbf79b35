// An indexed binary min-heap: each key at most once, priority (a, b) compared lexicographically, and
// O(log n) insert, re-prioritize, delete-by-key and pop. The fair queue keeps tenants (not items) in it.

export class IndexedHeap<K> {
  private readonly keys: K[] = [];
  private readonly a: number[] = [];
  private readonly b: number[] = [];
  private readonly pos = new Map<K, number>();

  get size(): number {
    return this.keys.length;
  }

  has(key: K): boolean {
    return this.pos.has(key);
  }

  /** The key with the least priority, without removing it. */
  peek(): K | undefined {
    return this.keys[0];
  }

  /** The least priority's first component. */
  peekPriority(): number | undefined {
    return this.a[0];
  }

  /** Insert `key`, or move it to its new priority. */
  set(key: K, a: number, b: number): void {
    const at = this.pos.get(key);
    if (at === undefined) {
      const i = this.keys.length;
      this.keys.push(key);
      this.a.push(a);
      this.b.push(b);
      this.pos.set(key, i);
      this.up(i);
      return;
    }
    this.a[at] = a;
    this.b[at] = b;
    this.down(this.up(at));
  }

  delete(key: K): boolean {
    const at = this.pos.get(key);
    if (at === undefined) return false;
    const last = this.keys.length - 1;
    if (at !== last) this.swap(at, last);
    this.keys.pop();
    this.a.pop();
    this.b.pop();
    this.pos.delete(key);
    if (at !== last) this.down(this.up(at));
    return true;
  }

  pop(): K | undefined {
    const top = this.keys[0];
    if (top !== undefined) this.delete(top);
    return top;
  }

  private less(i: number, j: number): boolean {
    const ai = this.a[i]!;
    const aj = this.a[j]!;
    return ai < aj || (ai === aj && this.b[i]! < this.b[j]!);
  }

  private swap(i: number, j: number): void {
    const ki = this.keys[i]!;
    const kj = this.keys[j]!;
    this.keys[i] = kj;
    this.keys[j] = ki;
    const ai = this.a[i]!;
    this.a[i] = this.a[j]!;
    this.a[j] = ai;
    const bi = this.b[i]!;
    this.b[i] = this.b[j]!;
    this.b[j] = bi;
    this.pos.set(kj, i);
    this.pos.set(ki, j);
  }

  private up(i: number): number {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
    return i;
  }

  private down(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
