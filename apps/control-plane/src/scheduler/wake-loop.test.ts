// WakeLoop: wakes coalesce into one extra cycle; with minGapMs, cycles start at most once per gap (wakes in
// between are deferred to the end of the gap, not dropped); stop() cancels a deferred cycle.
import { describe, expect, it } from 'vitest';
import { WakeLoop } from './wake-loop.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const noListen = { listen: async () => async () => undefined };

function counting(minGapMs?: number, cycleMs = 0) {
  const starts: number[] = [];
  const loop = new WakeLoop({
    ldb: noListen,
    channel: 'test',
    pollMs: 60_000,
    cycle: async () => {
      starts.push(performance.now());
      if (cycleMs > 0) await sleep(cycleMs);
    },
    onError: (e) => {
      throw e;
    },
    ...(minGapMs !== undefined ? { minGapMs } : {}),
  });
  return { loop, starts };
}

describe('WakeLoop', () => {
  it('runs one more cycle for any number of wakes during a cycle', async () => {
    const { loop, starts } = counting(undefined, 30);
    await loop.start();
    for (let i = 0; i < 10; i++) loop.wake();
    await sleep(120);
    await loop.stop();
    expect(starts).toHaveLength(2);
  });

  it('with minGapMs, starts cycles at most once per gap and defers (never drops) a wake inside it', async () => {
    const { loop, starts } = counting(50);
    await loop.start(); // cycle 1
    await sleep(5);
    for (let i = 0; i < 20; i++) loop.wake(); // all folded into cycle 2, at the end of the gap
    await sleep(150);
    expect(starts).toHaveLength(2);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(45);
    loop.wake(); // the gap has passed: at once
    await sleep(5);
    expect(starts).toHaveLength(3);
    await loop.stop();
  });

  it('stop() cancels a deferred cycle', async () => {
    const { loop, starts } = counting(50);
    await loop.start();
    await sleep(5);
    loop.wake();
    await loop.stop();
    await sleep(80);
    expect(starts).toHaveLength(1);
  });
});
