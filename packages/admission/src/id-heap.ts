// A binary min-heap of small integer ids (0, 1, 2, … — the fair queue numbers its tenants), held in
// typed arrays: ids, the priority (a, b) compared lexicographically, and each id's position. has /
// re-key / delete need no Map, and sifting touches only these compact arrays (10k tenants: ~240 KB),
// never the members themselves. Sifting moves a hole: the moving entry is written once at the end.

export class IdHeap {
  private ids = new Int32Array(16);
  private a = new Float64Array(16);
  private b = new Float64Array(16);
  /** Position of each id, -1 when absent. */
  private pos = new Int32Array(16).fill(-1);
  private n = 0;

  get size(): number {
    return this.n;
  }

  has(id: number): boolean {
    return id < this.pos.length && this.pos[id]! >= 0;
  }

  /** The id with the least priority, or -1 when empty. */
  peek(): number {
    return this.n > 0 ? this.ids[0]! : -1;
  }

  /** The least priority's first component (only when not empty). */
  peekA(): number {
    return this.a[0]!;
  }

  /** Insert `id`, or move it to its new priority (a no-op when the priority is unchanged). */
  set(id: number, a: number, b: number): void {
    if (id >= this.pos.length) this.growPos(id);
    const at = this.pos[id]!;
    if (at < 0) {
      if (this.n === this.ids.length) this.grow();
      this.up(this.n++, id, a, b);
      return;
    }
    const oldA = this.a[at]!;
    const oldB = this.b[at]!;
    if (a === oldA && b === oldB) return;
    if (a < oldA || (a === oldA && b < oldB)) this.up(at, id, a, b);
    else this.down(at, id, a, b);
  }

  delete(id: number): boolean {
    if (!this.has(id)) return false;
    const at = this.pos[id]!;
    this.pos[id] = -1;
    const last = --this.n;
    if (at === last) return true;
    // Refill the hole at `at` with the former last entry, sifting whichever way it must go.
    const lastId = this.ids[last]!;
    const lastA = this.a[last]!;
    const lastB = this.b[last]!;
    const p = (at - 1) >> 1;
    if (at > 0 && less(lastA, lastB, this.a[p]!, this.b[p]!)) this.up(at, lastId, lastA, lastB);
    else this.down(at, lastId, lastA, lastB);
    return true;
  }

  private place(i: number, id: number, a: number, b: number): void {
    this.ids[i] = id;
    this.a[i] = a;
    this.b[i] = b;
    this.pos[id] = i;
  }

  /** Put (id, a, b) into the hole at i, moving parents down while it is less. */
  private up(i: number, id: number, a: number, b: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pa = this.a[p]!;
      const pb = this.b[p]!;
      if (!less(a, b, pa, pb)) break;
      this.place(i, this.ids[p]!, pa, pb);
      i = p;
    }
    this.place(i, id, a, b);
  }

  /** Put (id, a, b) into the hole at i, moving the lesser child up while it is less. */
  private down(i: number, id: number, a: number, b: number): void {
    const n = this.n;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      let ca = this.a[c]!;
      let cb = this.b[c]!;
      const r = c + 1;
      if (r < n) {
        const ra = this.a[r]!;
        const rb = this.b[r]!;
        if (less(ra, rb, ca, cb)) {
          c = r;
          ca = ra;
          cb = rb;
        }
      }
      if (!less(ca, cb, a, b)) break;
      this.place(i, this.ids[c]!, ca, cb);
      i = c;
    }
    this.place(i, id, a, b);
  }

  private grow(): void {
    const cap = this.ids.length * 2;
    const ids = new Int32Array(cap);
    ids.set(this.ids);
    const a = new Float64Array(cap);
    a.set(this.a);
    const b = new Float64Array(cap);
    b.set(this.b);
    this.ids = ids;
    this.a = a;
    this.b = b;
  }

  private growPos(id: number): void {
    let cap = this.pos.length;
    while (cap <= id) cap *= 2;
    const pos = new Int32Array(cap).fill(-1);
    pos.set(this.pos);
    this.pos = pos;
  }
}

function less(a1: number, b1: number, a2: number, b2: number): boolean {
  return a1 < a2 || (a1 === a2 && b1 < b2);
}
