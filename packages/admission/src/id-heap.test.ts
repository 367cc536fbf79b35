import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo.js';
import { IdHeap } from './id-heap.js';
import { WfqNodes } from './wfq-nodes.js';

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
    const nodes = new WfqNodes();
    const fifo = new Fifo(nodes);
    const all = Array.from({ length: 200 }, () => nodes.alloc());
    for (const n of all) fifo.push(n);
    for (const n of all) {
      if (n % 3 !== 0) {
        nodes.removed[n] = 1;
        fifo.noteRemoved();
      }
    }
    const out: number[] = [];
    for (let n = fifo.shift(); n >= 0; n = fifo.shift()) out.push(n);
    expect(out).toEqual(all.filter((n) => n % 3 === 0));
  });
});
