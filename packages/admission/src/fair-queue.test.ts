import type { RunClass } from '@everdict/run-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairQueue, type QueueItem } from './fair-queue.js';
import { MAX_WEIGHT, MIN_WEIGHT } from './wfq.js';

const A = 100; // aging bound used throughout

describe('FairQueue', () => {
  it('serves interactive, then background, then batch; a blocked tenant is skipped', () => {
    const q = new FairQueue(A);
    q.enqueue({ id: 'b', tenant: 'x', class: 'batch', enqueuedAt: 0 });
    q.enqueue({ id: 'g', tenant: 'x', class: 'background', enqueuedAt: 1 });
    q.enqueue({ id: 'i', tenant: 'y', class: 'interactive', enqueuedAt: 2 });
    q.setBlocked('y', true);
    expect(q.next(3)?.id).toBe('g');
    q.setBlocked('y', false);
    expect([q.next(3)?.id, q.next(3)?.id, q.next(3)]).toEqual(['i', 'b', undefined]);
  });

  it('promotes an item past the aging bound ahead of every class, and forgets removed items', () => {
    const q = new FairQueue(A);
    q.enqueue({ id: 'old', tenant: 'x', class: 'batch', enqueuedAt: 0 });
    q.enqueue({ id: 'gone', tenant: 'x', class: 'batch', enqueuedAt: 1 });
    q.enqueue({ id: 'new', tenant: 'y', class: 'interactive', enqueuedAt: A });
    expect(q.next(A - 1)?.id).toBe('new');
    q.enqueue({ id: 'new2', tenant: 'y', class: 'interactive', enqueuedAt: A });
    expect(q.remove('x', 'gone')).toBe(true);
    expect([q.next(A)?.id, q.next(A)?.id, q.size]).toEqual(['old', 'new2', 0]);
  });

  // Self-clocked WFQ bounds, checked at EVERY prefix of k dispatches among backlogged tenants:
  //   pairwise   |served_i/w_i − served_j/w_j| ≤ 1/w_i + 1/w_j
  //   share      |served_i − k·w_i/W| ≤ 1 + (n−2)·w_i/W  (< n−1 dispatches)
  // so each tenant's share served_i/k converges to w_i/W with error below (n−1)/k.
  // Integer weights, and fractional ones spread over the whole allowed range (log-uniform-ish).
  const weight = fc.oneof(
    fc.integer({ min: 1, max: 8 }),
    fc.double({ min: 0.05, max: 20, noNaN: true }),
    fc.integer({ min: -6, max: 6 }).map((e) => Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, 10 ** e))),
  );
  const weights = fc.array(weight, { minLength: 2, maxLength: 6 });
  for (const regime of ['fresh', 'aged'] as const) {
    it(`gives each backlogged tenant its weighted share (${regime} items)`, () => {
      fc.assert(
        fc.property(
          weights,
          fc.integer({ min: 20, max: 300 }),
          fc.constantFrom<RunClass>('batch', 'background'),
          (ws, k, cls) => {
            const q = new FairQueue(A);
            for (const [t, w] of ws.entries()) q.setWeight(`t${t}`, w);
            for (let i = 0; i < k; i++) {
              for (const t of ws.keys())
                q.enqueue({ id: `t${t}-${i}`, tenant: `t${t}`, class: cls, enqueuedAt: i % 7 });
            }
            const now = regime === 'fresh' ? 0 : 10 * A;
            const total = ws.reduce((a, b) => a + b, 0);
            const served = ws.map(() => 0);
            const violations: string[] = [];
            for (let n = 1; n <= k; n++) {
              served[Number(q.next(now)!.tenant.slice(1))]! += 1;
              ws.forEach((wi, i) => {
                const share = 1 + ((ws.length - 2) * wi) / total;
                if (Math.abs(served[i]! - (n * wi) / total) > share + 1e-9)
                  violations.push(`share of t${i} at ${n}`);
                ws.forEach((wj, j) => {
                  const lag = Math.abs(served[i]! / wi - served[j]! / wj);
                  if (lag > 1 / wi + 1 / wj + 1e-9) violations.push(`t${i}/t${j} at ${n}`);
                });
              });
            }
            expect(violations).toEqual([]);
          },
        ),
        { numRuns: 50 },
      );
    });
  }

  // Idle and back: a tenant served alone for a while banks nothing (its tags restart at the class clock),
  // and one that sat idle banks nothing either: from the moment all are backlogged, the pairwise bound holds
  // on the services counted from that moment.
  it('banks no credit across an idle spell: the bound holds from the moment all are backlogged', () => {
    fc.assert(
      fc.property(
        weights,
        fc.array(fc.nat(40), { minLength: 6, maxLength: 6 }),
        fc.integer({ min: 20, max: 150 }),
        (ws, alone, k) => {
          const q = new FairQueue(A);
          for (const [t, w] of ws.entries()) q.setWeight(`t${t}`, w);
          let id = 0;
          // Phase 1: each tenant in turn is served alone (`alone[t]` items), the others idle.
          for (const t of ws.keys()) {
            for (let i = 0; i < alone[t]!; i++)
              q.enqueue({ id: `p${id++}`, tenant: `t${t}`, class: 'batch', enqueuedAt: 0 });
            while (q.next(0)) {}
          }
          // Phase 2: everyone backlogged at once.
          for (let i = 0; i < k; i++)
            for (const t of ws.keys())
              q.enqueue({ id: `q${id++}`, tenant: `t${t}`, class: 'batch', enqueuedAt: 0 });
          const served = ws.map(() => 0);
          for (let n = 1; n <= k; n++) {
            served[Number(q.next(0)!.tenant.slice(1))]! += 1;
            ws.forEach((wi, i) => {
              ws.forEach((wj, j) => {
                const lag = Math.abs(served[i]! / wi - served[j]! / wj);
                expect(lag, `t${i}/t${j} at ${n}`).toBeLessThanOrEqual(1 / wi + 1 / wj + 1e-9);
              });
            });
          }
        },
      ),
      { numRuns: 50 },
    );
  });

  // Cancelled entries are not banked: a tenant with no live entry left in a lane starts its next one at the
  // class clock (WFQ's "idle" rule). Before, 100 queued-then-cancelled runs kept a's lane tag at 100, so its
  // next run waited behind all of b's backlog (only the aging bound cut the wait).
  it('does not count cancelled entries against a tenant: its next entry starts at the class clock', () => {
    const q = new FairQueue(1e9);
    for (let i = 0; i < 100; i++) q.enqueue({ id: `b${i}`, tenant: 'b', class: 'batch', enqueuedAt: 0 });
    for (let i = 0; i < 100; i++) q.enqueue({ id: `a${i}`, tenant: 'a', class: 'batch', enqueuedAt: 0 });
    for (let i = 0; i < 100; i++) expect(q.remove('a', `a${i}`)).toBe(true);
    q.enqueue({ id: 'probe', tenant: 'a', class: 'batch', enqueuedAt: 0 });
    const order = Array.from({ length: 4 }, () => q.next(0)?.id);
    expect(order).toEqual(['b0', 'probe', 'b1', 'b2']);
  });

  // ...and that cannot be gamed: a tenant that enqueues, cancels (some or all) and re-queues at will never gets
  // ahead of its weighted share against a continuously backlogged one: served_a <= w_a / w_b * (served_b + 1).
  it('gives no more than the weighted share to a tenant that cancels and re-queues (property)', () => {
    const op = fc.oneof(
      fc.record({ enqueue: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ cancel: fc.nat() }),
      fc.record({ cancelAll: fc.constant(true) }),
      fc.record({ serve: fc.integer({ min: 1, max: 4 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<RunClass>('interactive', 'batch'),
        fc.array(op, { maxLength: 120 }),
        (wa, wb, cls, ops) => {
          const q = new FairQueue(1e9);
          q.setWeight('a', wa);
          q.setWeight('b', wb);
          for (let i = 0; i < 2000; i++) q.enqueue({ id: `b${i}`, tenant: 'b', class: cls, enqueuedAt: 0 });
          const live: string[] = [];
          let id = 0;
          const served = { a: 0, b: 0 };
          for (const o of ops) {
            if ('enqueue' in o) {
              for (let i = 0; i < o.enqueue; i++) {
                const item = `a${id++}`;
                q.enqueue({ id: item, tenant: 'a', class: cls, enqueuedAt: 0 });
                live.push(item);
              }
            } else if ('cancel' in o) {
              if (live.length > 0)
                expect(q.remove('a', live.splice(o.cancel % live.length, 1)[0]!)).toBe(true);
            } else if ('cancelAll' in o) {
              for (const item of live.splice(0)) expect(q.remove('a', item)).toBe(true);
            } else {
              for (let i = 0; i < o.serve; i++) {
                const item = q.next(0)!;
                served[item.tenant as 'a' | 'b']++;
                if (item.tenant === 'a') live.splice(live.indexOf(item.id), 1);
                expect(served.a).toBeLessThanOrEqual((wa / wb) * (served.b + 1) + 1e-9);
              }
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  // A weight near zero made every tag Infinity (1 / 5e-324) or so large that other tenants' 1 / weight steps
  // were lost in rounding: the class clock jumped there and the class became one FIFO for every tenant.
  it('refuses weights outside [MIN_WEIGHT, MAX_WEIGHT], and keeps others fair after the lightest is served', () => {
    const q = new FairQueue(A);
    for (const bad of [0, -1, 5e-324, 1e-300, MIN_WEIGHT / 2, MAX_WEIGHT * 2, Number.NaN, Infinity]) {
      expect(() => q.setWeight('z', bad), String(bad)).toThrow(RangeError);
    }
    q.setWeight('z', MIN_WEIGHT);
    q.enqueue({ id: 'z1', tenant: 'z', class: 'batch', enqueuedAt: 0 });
    expect(q.next(0)?.id).toBe('z1'); // the class clock is now 1 / MIN_WEIGHT = 1e6
    for (let i = 0; i < 10; i++) {
      q.enqueue({ id: `a${i}`, tenant: 'a', class: 'batch', enqueuedAt: 0 });
      q.enqueue({ id: `b${i}`, tenant: 'b', class: 'batch', enqueuedAt: 0 });
    }
    const order = Array.from({ length: 20 }, () => q.next(0)?.tenant).join('');
    expect(order).toBe('ab'.repeat(10));
  });

  it('refuses a non-finite clock (it would count every tenant as aged)', () => {
    const q = new FairQueue(A);
    expect(() => q.enqueue({ id: 'x', tenant: 't', class: 'batch', enqueuedAt: Number.NaN })).toThrow(
      RangeError,
    );
    q.enqueue({ id: 'x', tenant: 't', class: 'batch', enqueuedAt: 0 });
    expect(() => q.next(Number.NaN)).toThrow(RangeError);
    expect(q.next(0)?.id).toBe('x');
  });

  // The aging rule as an invariant: capacity never goes to an unaged item while an aged one waits.
  it('never dispatches an unaged item while an item past the bound waits', () => {
    const op = fc.oneof(
      fc.record({
        t: fc.integer({ min: 0, max: 5 }),
        c: fc.constantFrom<RunClass>('interactive', 'background', 'batch'),
        n: fc.integer({ min: 1, max: 6 }),
      }),
      fc.record({ dispatch: fc.integer({ min: 0, max: 4 }), dt: fc.integer({ min: 0, max: 60 }) }),
    );
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 200 }),
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 6, maxLength: 6 }),
        (ops, ws) => {
          const q = new FairQueue(A);
          for (const [t, w] of ws.entries()) q.setWeight(`t${t}`, w);
          const queued = new Map<string, QueueItem>();
          let now = 0;
          let id = 0;
          for (const o of ops) {
            if ('t' in o) {
              for (let i = 0; i < o.n; i++) {
                const item = { id: `i${id++}`, tenant: `t${o.t}`, class: o.c, enqueuedAt: now };
                q.enqueue(item);
                queued.set(item.id, item);
              }
              continue;
            }
            now += o.dt;
            for (let i = 0; i < o.dispatch; i++) {
              const item = q.next(now);
              if (!item) {
                expect(queued.size).toBe(0);
                break;
              }
              queued.delete(item.id);
              if (now - item.enqueuedAt < A) {
                const starved = [...queued.values()].filter((w) => now - w.enqueuedAt >= A);
                expect(starved).toEqual([]);
              }
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('bounds a background wait by the aging bound under an interactive flood beyond capacity', () => {
    fc.assert(
      // The quiet tenant sends 1 item per 5 ticks; it stays within its aged share while flooders ≤ 5·capacity − 2.
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 18 }), (capacity, f) => {
        const flooders = Math.min(f, 5 * capacity - 2);
        const q = new FairQueue(A);
        let worst = 0;
        let id = 0;
        const tick = 10; // ms per tick
        for (let now = 0; now < 200 * tick; now += tick) {
          for (let f = 0; f < flooders; f++) {
            for (let i = 0; i < capacity; i++)
              q.enqueue({ id: `f${id++}`, tenant: `flood${f}`, class: 'interactive', enqueuedAt: now });
          }
          if (now % (5 * tick) === 0)
            q.enqueue({ id: `b${id++}`, tenant: 'quiet', class: 'background', enqueuedAt: now });
          for (let i = 0; i < capacity; i++) {
            const item = q.next(now);
            if (item?.tenant === 'quiet') worst = Math.max(worst, now - item.enqueuedAt);
          }
        }
        // Stated bound: agingMs + one aged WFQ round — at most 2 items of every other tenant with aged work
        // (equal weights) and then its own — rounded up to whole ticks of `capacity` dispatches.
        expect(worst).toBeLessThanOrEqual(A + tick * Math.ceil((2 * flooders + 1) / capacity));
        expect(worst).toBeGreaterThanOrEqual(A - tick);
      }),
      { numRuns: 24 },
    );
  });
});
