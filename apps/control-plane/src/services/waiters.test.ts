// Waiters (the long-polls' sleep): a wake that came while a poll was looking is not lost, nothing is left behind.
// Fake timers: "still asleep" is exact.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Waiters } from './waiters.js';

describe('Waiters', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const settled = (p: Promise<void>) => {
    const s = { done: false };
    void p.then(() => {
      s.done = true;
    });
    return s;
  };

  it('a wait begun after a wake it has not seen returns at once; one that saw every wake sleeps', async () => {
    const w = new Waiters();
    const seen = w.generation; // noted before the poll looks
    w.wake(); // while it looks: nobody waits yet
    const missed = settled(w.wait(60_000, undefined, seen));
    const current = settled(w.wait(60_000, undefined, w.generation));
    await vi.advanceTimersByTimeAsync(0);
    expect(missed.done).toBe(true);
    expect(current.done).toBe(false);
    expect(w.size).toBe(1);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(current.done).toBe(false);
    w.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(current.done).toBe(true);
    expect(w.size).toBe(0);
  });

  it('times out, and an abort ends a wait and leaves no waiter and no listener', async () => {
    const w = new Waiters();
    const timed = settled(w.wait(1_000));
    await vi.advanceTimersByTimeAsync(999);
    expect(timed.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(timed.done).toBe(true);
    const ac = new AbortController();
    const add = vi.spyOn(ac.signal, 'addEventListener');
    const remove = vi.spyOn(ac.signal, 'removeEventListener');
    const cut = settled(w.wait(60_000, ac.signal));
    ac.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(cut.done).toBe(true);
    expect(w.size).toBe(0);
    expect(remove).toHaveBeenCalledWith('abort', add.mock.calls[0]?.[1]);
    expect(settled(w.wait(60_000, ac.signal)).done).toBe(false); // already aborted: resolves at once
    await vi.advanceTimersByTimeAsync(0);
    expect(w.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
