// (tenant number, run id) → row number: one open-addressing hash table for every tenant's runs, in place
// of a `Map` per tenant, so a million runs put no map entry on the GC-managed heap — the run id strings
// (a column of the run table) are the only per-run objects left. Linear probing over an `Int32Array` of
// [hash, row + 1] pairs (0: empty), load factor ≤ 1/2; a probe compares the stored hash first and only
// then the row's run id and tenant, so a miss rarely touches a string. Rows are never removed (the store
// never forgets a run), so there are no tombstones; growth rehashes from the stored hashes.

/** Where the index reads a row's key: the run table's columns (read on each probe; they may be replaced). */
export interface RowKeys {
  readonly runId: readonly string[];
  readonly tenant: Int32Array;
}

/** FNV-1a over the UTF-16 code units, seeded with the scope, then murmur3's finalizer for the low bits. */
export function hashKey(scope: number, key: string): number {
  let h = Math.imul(scope ^ 0x811c9dc5, 0x01000193);
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export class RunIndex {
  /** [hash, row + 1] per slot. */
  private slots: Int32Array;
  /** Slot count − 1 (a power of two minus one). */
  private mask: number;
  private count = 0;
  /** The last key hashed: a commit looks its run id up, then adds it (one hash for both). */
  private lastKey = '';
  private lastScope = -1;
  private lastHash = 0;

  constructor(
    private readonly keys: RowKeys,
    capacity = 1024,
  ) {
    let n = 16;
    while (n < capacity * 2) n *= 2;
    this.slots = new Int32Array(n * 2);
    this.mask = n - 1;
  }

  get size(): number {
    return this.count;
  }

  private hash(scope: number, key: string): number {
    if (key === this.lastKey && scope === this.lastScope) return this.lastHash;
    const h = hashKey(scope, key);
    this.lastKey = key;
    this.lastScope = scope;
    this.lastHash = h;
    return h;
  }

  /** The row of `key` in `scope`, or -1. */
  get(scope: number, key: string): number {
    const h = this.hash(scope, key);
    const slots = this.slots;
    const mask = this.mask;
    const { runId, tenant } = this.keys;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const row = slots[2 * i + 1]! - 1;
      if (row < 0) return -1;
      if (slots[2 * i] === h && tenant[row] === scope && runId[row] === key) return row;
    }
  }

  /** Index `row` under `key` in `scope`, which must not be indexed yet (the caller looked it up). */
  add(scope: number, key: string, row: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow();
    this.place(this.hash(scope, key), row);
    this.count++;
  }

  private place(h: number, row: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    while (slots[2 * i + 1] !== 0) i = (i + 1) & mask;
    slots[2 * i] = h;
    slots[2 * i + 1] = row + 1;
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Int32Array(old.length * 2);
    this.mask = this.mask * 2 + 1;
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.place(old[i]!, old[i + 1]! - 1);
  }
}
