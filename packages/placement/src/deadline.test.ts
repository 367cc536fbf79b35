import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, wallTimer } from './deadline.js';
import { ResourceLimits } from './spec.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('wallTimer', () => {
  it('fires a delay past 2^31 − 1 ms at its end, not at once (plain setTimeout would)', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const ms = 3 * MAX_TIMER_MS + 5;
    wallTimer(ms, fired);
    vi.advanceTimersByTime(1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(ms - 2);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('clears at any step', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const t = wallTimer(2 * MAX_TIMER_MS, fired);
    vi.advanceTimersByTime(MAX_TIMER_MS + 10);
    t.clear();
    vi.advanceTimersByTime(2 * MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
  });

  it('bounds wallTimeoutMs at 366 days in the schema', () => {
    expect(ResourceLimits.parse({ wallTimeoutMs: 366 * 86_400_000 }).wallTimeoutMs).toBe(366 * 86_400_000);
    expect(ResourceLimits.safeParse({ wallTimeoutMs: 366 * 86_400_000 + 1 }).success).toBe(false);
  });
});
