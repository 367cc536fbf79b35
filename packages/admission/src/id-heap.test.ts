import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo.js';
import { IdHeap } from './id-heap.js';

describe('IdHeap', () => {
  it('peeks the least (a, b) under any sequence of set / delete', () => {
    const op = fc.record({
      id: fc.integer({ min: 0, max: 40 }),
      a: fc.integer({ min: 0, max: 5 }),
      del: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const heap = new IdHeap();
        const ref = new Map<number, [number, number]>();
        ops.forEach(({ id, a, del }, i) => {
          if (del) expect(heap.delete(id)).toBe(ref.delete(id));
          else {
            heap.set(id, a, i);
            ref.set(id, [a, i]);
          }
          const least = [...ref].sort(([, x], [, y]) => x[0] - y[0] || x[1] - y[1])[0];
          expect(heap.size).toBe(ref.size);
          expect(heap.peek()).toBe(least ? least[0] : -1);
          if (least) expect(heap.peekA()).toBe(least[1][0]);
        });
      }),
    );
  });
});

describe('Fifo', () => {
  it('keeps order across growth, lazy removal and compaction', () => {
    const fifo = new Fifo<{ n: number; removed: boolean }>();
    const all = Array.from({ length: 200 }, (_, n) => ({ n, removed: false }));
    for (const e of all) fifo.push(e);
    for (const e of all) {
      if (e.n % 3 !== 0) {
        e.removed = true;
        fifo.noteRemoved();
      }
    }
    const out: number[] = [];
    for (let e = fifo.shift(); e; e = fifo.shift()) out.push(e.n);
    expect(out).toEqual(all.filter((e) => e.n % 3 === 0).map((e) => e.n));
  });
});
