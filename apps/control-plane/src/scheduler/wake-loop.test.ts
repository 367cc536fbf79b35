// WakeLoop: wakes coalesce into one extra cycle; with minGapMs, cycles start at most once per gap (wakes in
// between are deferred to the end of the gap, not dropped); stop() cancels a deferred cycle. Fake timers
// (setTimeout, setInterval and performance.now): time moves only when the test moves it, so "nothing
// started" is exact, never a guess after a sleep.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fallbackPoll } from '../db/fallback-poll.js';
import {
  dispatchPayload,
  INLINE_ONLY_NOTE,
  mayWakeInline,
  mayWakeRunners,
  RELEASED_PAYLOAD,
  RUNNERS_ONLY_NOTE,
} from '../services/context.js';
import { WakeLoop } from './wake-loop.js';

const noListen = { listen: async () => async () => undefined };

function counting(minGapMs?: number, cycleMs = 0) {
  const starts: number[] = [];
  const loop = new WakeLoop({
    ldb: noListen,
    channel: 'test',
    pollMs: 60_000,
    cycle: async () => {
      starts.push(performance.now());
      if (cycleMs > 0) await new Promise((r) => setTimeout(r, cycleMs));
    },
    onError: (e) => {
      throw e;
    },
    ...(minGapMs !== undefined ? { minGapMs } : {}),
  });
  return { loop, starts };
}

/** A loop whose NOTIFYs the test sends (`notify`), counting its cycles and what it heard. */
function listening(opts: Partial<ConstructorParameters<typeof WakeLoop>[0]> = {}) {
  let deliver: (payload: string) => void = () => undefined;
  const starts: number[] = [];
  const heard = { n: 0 };
  const loop = new WakeLoop({
    ldb: {
      listen: async (_channel, fn) => {
        deliver = fn;
        return async () => undefined;
      },
    },
    channel: 'test',
    pollMs: 60_000,
    cycle: async () => {
      starts.push(performance.now());
    },
    onError: (e) => {
      throw e;
    },
    onHeard: () => {
      heard.n++;
    },
    ...opts,
  });
  return { loop, starts, heard, notify: (payload: string) => deliver(payload) };
}

describe('WakeLoop', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs one more cycle for any number of wakes during a cycle', async () => {
    const { loop, starts } = counting(undefined, 30);
    await loop.start();
    for (let i = 0; i < 10; i++) loop.wake();
    await vi.advanceTimersByTimeAsync(30); // cycle 1 ends; the folded wakes start exactly one more
    expect(starts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(starts).toHaveLength(2);
    await loop.stop();
  });

  it('with minGapMs, starts cycles at most once per gap and defers (never drops) a wake inside it', async () => {
    const { loop, starts } = counting(50);
    await loop.start(); // cycle 1
    await vi.advanceTimersByTimeAsync(5);
    for (let i = 0; i < 20; i++) loop.wake(); // all folded into cycle 2, at the end of the gap
    await vi.advanceTimersByTimeAsync(44);
    expect(starts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toHaveLength(2);
    expect(starts[1]! - starts[0]!).toBe(50);
    await vi.advanceTimersByTimeAsync(100);
    loop.wake(); // the gap has passed: at once
    expect(starts).toHaveLength(3);
    await loop.stop();
  });

  it('stop() cancels a deferred cycle', async () => {
    const { loop, starts } = counting(50);
    await loop.start();
    await vi.advanceTimersByTimeAsync(5);
    loop.wake();
    await loop.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(starts).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a NOTIFY carrying its own payload does not wake it; any other payload does', async () => {
    const { loop, starts, notify } = listening({ ownPayload: 'dispatch:me' });
    await loop.start(); // cycle 1
    await vi.advanceTimersByTimeAsync(1);
    notify('dispatch:me'); // its own create's echo: it was woken in-process already
    notify(dispatchPayload('dispatch:me', ['analysis'])); // its own, with the inline-only note
    expect(starts).toHaveLength(1);
    notify(dispatchPayload('dispatch:other', ['analysis'])); // another replica's create
    expect(starts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    notify('dispatch:mee'); // not its token: a prefix alone is not its own
    expect(starts).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    notify(''); // a cancel, a sweep
    expect(starts).toHaveLength(4);
    await loop.stop();
  });

  it('onHeard: called for a NOTIFY not its own and for each poll, not for its own or an in-process wake', async () => {
    const { loop, heard: h, notify } = listening({ ownPayload: 'dispatch:me', pollMs: 1_000 });
    await loop.start();
    notify('dispatch:me');
    notify(dispatchPayload('dispatch:me', ['analysis']));
    loop.wake();
    expect(h.n).toBe(0);
    notify(''); // a cancel
    notify(dispatchPayload('dispatch:other', ['analysis']));
    expect(h.n).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000); // the poll
    expect(h.n).toBe(3);
    await loop.stop();
  });

  it('with a fallback: alone, the poll looks every aloneMs, a cycle counting as a look; not alone, every pollMs', async () => {
    const ldb = { dialect: 'postgres' as const, isAlone: true, alone: () => ldb.isAlone };
    const {
      loop,
      starts,
      heard: h,
    } = listening({ pollMs: 1_000, fallback: fallbackPoll(ldb, 1_000, 5_000) });
    await loop.start(); // cycle 1, at 0
    await vi.advanceTimersByTimeAsync(20_000);
    expect(starts).toEqual([0, 5_000, 10_000, 15_000, 20_000]);
    expect(h.n).toBe(4); // the polls that looked, and only they
    loop.wake(); // an in-process wake at 20,000 + ε: a look; the next poll is 5 s after it
    await vi.advanceTimersByTimeAsync(2_500);
    loop.wake();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(starts.slice(5)).toEqual([20_000, 22_500, 27_000]);
    ldb.isAlone = false; // another replica appeared: from the next tick on, every poll looks
    const before = starts.length;
    await vi.advanceTimersByTimeAsync(3_000);
    expect(starts.length - before).toBe(3);
    await loop.stop();
  });

  it('wakesFor: a NOTIFY for another lane (a runners-only release) neither wakes it nor counts as heard', async () => {
    const { loop, starts, heard: h, notify } = listening({ wakesFor: mayWakeInline });
    await loop.start(); // cycle 1
    await vi.advanceTimersByTimeAsync(1);
    notify(`${RELEASED_PAYLOAD}${RUNNERS_ONLY_NOTE}`);
    expect([starts.length, h.n]).toEqual([1, 0]);
    notify(`${RELEASED_PAYLOAD}${INLINE_ONLY_NOTE}`);
    expect([starts.length, h.n]).toEqual([2, 1]);
    await vi.advanceTimersByTimeAsync(1);
    notify(RELEASED_PAYLOAD); // both lanes
    expect([starts.length, h.n]).toEqual([3, 2]);
    await loop.stop();
  });

  it('tells runners apart from inline-only creates by the payload note', () => {
    expect(dispatchPayload('dispatch:me', ['analysis', 'analysis'])).toBe('dispatch:me;inline');
    expect(dispatchPayload('dispatch:me', ['analysis', 'command'])).toBe('dispatch:me');
    expect(mayWakeRunners(dispatchPayload('', ['analysis']))).toBe(false);
    expect(mayWakeRunners(dispatchPayload('dispatch:me', ['eval']))).toBe(true);
    expect(mayWakeRunners('')).toBe(true); // a cancel, a sweep, an older replica
  });
});
