import { describe, expect, it, vi } from 'vitest';
import { Backoff, pause } from './backoff.js';

describe('Backoff', () => {
  it('250 ms doubling to 5 s; reset starts over', () => {
    const b = new Backoff();
    expect([1, 2, 3, 4, 5, 6, 7].map(() => b.delay())).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    b.reset();
    expect(b.delay()).toBe(250);
  });

  it('a Retry-After is honoured when longer, up to a minute', () => {
    const b = new Backoff();
    expect(b.delay(3)).toBe(3000);
    expect(b.delay(0)).toBe(500);
    expect(b.delay(3600)).toBe(60_000);
  });
});

describe('pause', () => {
  it('ends at its time, or at once on abort (fake timers)', async () => {
    vi.useFakeTimers();
    try {
      let done = false;
      const ac = new AbortController();
      const p = pause(60_000, ac.signal).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(59_999);
      expect(done).toBe(false);
      ac.abort();
      await p;
      expect(done).toBe(true);
      expect(vi.getTimerCount()).toBe(0); // its timer cleared
      let timed = false;
      const q = pause(1_000).then(() => {
        timed = true;
      });
      await vi.advanceTimersByTimeAsync(1_000);
      await q;
      expect(timed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
