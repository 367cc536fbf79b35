// The account walk must remember every call id ever dispatched (the spec's `dispatched_twice` rule). This
// table keeps them as UTF-8 bytes in one growing arena with an open-addressing index, so that remembering an
// id allocates no JS object (nothing for the GC to trace or promote) and costs ~(length + 24) bytes instead
// of a string plus a Map entry. Keys are compared as bytes: for well-formed strings (the only ones a segment
// can hold) byte equality of UTF-8 is string equality.

const utf8 = new TextDecoder('utf-8');
const EMPTY = 0;

function hashBytes(b: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5 ^ len;
  for (let i = at; i < at + len; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

export class IdTable {
  private arena = new Uint8Array(1 << 12);
  private used = 0;
  /** Per entry: arena offset, length, hash, value. */
  private meta = new Int32Array(4 * 256);
  private count = 0;
  /** Entry number + 1, or EMPTY. */
  private slots = new Int32Array(512);

  get size(): number {
    return this.count;
  }

  /** The entry of the id `b[at..at+len)`, or -1. */
  find(b: Uint8Array, at: number, len: number): number {
    return this.probe(b, at, len, hashBytes(b, at, len)) >> 1;
  }

  /** Value of entry `e`. */
  get(e: number): number {
    return this.meta[4 * e + 3]!;
  }

  set(e: number, value: number): void {
    this.meta[4 * e + 3] = value;
  }

  /** Adds an id known to be absent; returns its entry. */
  add(b: Uint8Array, at: number, len: number, value: number): number {
    if (2 * (this.count + 1) > this.slots.length) this.rehash();
    const h = hashBytes(b, at, len);
    const slot = this.probe(b, at, len, h);
    const e = this.count++;
    if (4 * this.count > this.meta.length) {
      const next = new Int32Array(this.meta.length * 2);
      next.set(this.meta);
      this.meta = next;
    }
    if (this.used + len > this.arena.length) {
      const next = new Uint8Array(Math.max(this.arena.length * 2, this.used + len));
      next.set(this.arena.subarray(0, this.used));
      this.arena = next;
    }
    this.arena.set(b.subarray(at, at + len), this.used);
    const m = this.meta;
    m[4 * e] = this.used;
    m[4 * e + 1] = len;
    m[4 * e + 2] = h | 0;
    m[4 * e + 3] = value;
    this.used += len;
    this.slots[-(slot >> 1) - 1] = e + 1;
    return e;
  }

  /** The id of entry `e` as a string. */
  id(e: number): string {
    const at = this.meta[4 * e]!;
    return utf8.decode(this.arena.subarray(at, at + this.meta[4 * e + 1]!));
  }

  /** Entries whose value satisfies `keep`, as strings, in insertion order. */
  ids(keep: (value: number) => boolean): string[] {
    const out: string[] = [];
    for (let e = 0; e < this.count; e++) if (keep(this.get(e))) out.push(this.id(e));
    return out;
  }

  /** (entry << 1) when found; otherwise ((-slot - 1) << 1) for the empty slot where it would go. */
  private probe(b: Uint8Array, at: number, len: number, h: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    const m = this.meta;
    const a = this.arena;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const v = slots[s]!;
      if (v === EMPTY) return (-s - 1) << 1;
      const e = v - 1;
      if (m[4 * e + 1] !== len || m[4 * e + 2] !== (h | 0)) continue;
      const off = m[4 * e]!;
      let i = 0;
      while (i < len && a[off + i] === b[at + i]) i++;
      if (i === len) return e << 1;
    }
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let e = 0; e < this.count; e++) {
      let s = (this.meta[4 * e + 2]! >>> 0) & mask;
      while (slots[s] !== EMPTY) s = (s + 1) & mask;
      slots[s] = e + 1;
    }
    this.slots = slots;
  }
}
