// The fallback looks of announcement-driven loops: every `pollMs` while other processes share the database,
// every `aloneMs` while this one is alone on it (PGlite always; PostgreSQL as listener presence says). Times are
// passed in: nothing here waits.
import { describe, expect, it } from 'vitest';
import { everyPoll, fallbackPoll, NudgedLooks } from './fallback-poll.js';

/** A PostgreSQL ledger whose presence the test sets. */
function postgres(alone: boolean) {
  const ldb = { dialect: 'postgres' as const, alone: () => ldb.isAlone, isAlone: alone };
  return ldb;
}

describe('fallbackPoll', () => {
  it('on PGlite: always alone, looks every aloneMs (default 5 × pollMs, never below pollMs)', () => {
    const pglite = { dialect: 'pglite' as const };
    expect(fallbackPoll(pglite, 1000).periodMs()).toBe(5000);
    expect(fallbackPoll(pglite, 1000, 8000).periodMs()).toBe(8000);
    expect(fallbackPoll(pglite, 1000, 10).periodMs()).toBe(1000);
    expect(fallbackPoll(pglite, 1000).alone()).toBe(true);
  });

  it('on PostgreSQL: follows presence as it changes', () => {
    const ldb = postgres(false);
    const f = fallbackPoll(ldb, 1000, 5000);
    expect(f.periodMs()).toBe(1000);
    expect(f.due(0, 10)).toBe(true); // not alone: every tick looks
    ldb.isAlone = true;
    expect(f.periodMs()).toBe(5000);
    expect(f.due(0, 1000)).toBe(false);
    expect(f.due(0, 4499)).toBe(false);
    expect(f.due(0, 4500)).toBe(true); // half a tick of slack: a timer firing early does not cost a tick
    ldb.isAlone = false;
    expect(f.due(0, 1000)).toBe(true);
    // A process that opened no presence (it never listened) is never alone.
    expect(fallbackPoll({ dialect: 'postgres' }, 1000).alone()).toBe(false);
  });

  it('everyPoll looks every tick', () => {
    const f = everyPoll(250);
    expect([f.periodMs(), f.aloneMs, f.alone(), f.due(0, 1)]).toEqual([250, 250, false, true]);
  });
});

describe('NudgedLooks', () => {
  it('not alone (or without a fallback): every tick looks', () => {
    const looks = new NudgedLooks(fallbackPoll(postgres(false), 100, 1000), 100);
    const bare = new NudgedLooks(undefined, 100);
    for (let t = 0; t < 1000; t += 100) {
      expect(looks.look(t)).toBe(true);
      expect(bare.look(t)).toBe(true);
    }
  });

  it('alone: one look per aloneMs while quiet; a nudge makes the next tick look, once', () => {
    const looks = new NudgedLooks(fallbackPoll({ dialect: 'pglite' }, 100, 1000), 100);
    const ticks = (from: number, to: number) => {
      const taken: number[] = [];
      for (let t = from; t < to; t += 100) if (looks.look(t)) taken.push(t);
      return taken;
    };
    expect(ticks(0, 3000)).toEqual([0, 1000, 2000]);
    expect(looks.skipped).toBe(27);
    looks.nudge(2950);
    looks.nudge(2960); // nudges between two ticks: one look
    expect(ticks(3000, 5000)).toEqual([3000, 4000]); // the nudged tick, then quiet again from it
    looks.nudge(4050);
    expect(ticks(4100, 4300)).toEqual([4100]);
    expect(ticks(4300, 5200)).toEqual([5100]); // aloneMs after the nudged look
  });

  it('with trailMs, every tick looks for that long after a nudge', () => {
    const looks = new NudgedLooks(fallbackPoll({ dialect: 'pglite' }, 100, 1000), 100, 250);
    looks.look(0); // the first look
    looks.nudge(50);
    const taken: number[] = [];
    for (let t = 100; t < 1000; t += 100) if (looks.look(t)) taken.push(t);
    expect(taken).toEqual([100, 200, 300]); // the nudged tick, and the ones up to 250 ms after the nudge
  });
});

describe('NudgedLooks with deadlines', () => {
  it('alone: the first tick at or after a known deadline looks; a look forgets it', () => {
    const looks = new NudgedLooks(fallbackPoll({ dialect: 'pglite' }, 100, 10_000), 100);
    expect(looks.look(0, 0)).toBe(true);
    looks.dueBy(750); // in the loop's clock
    looks.dueBy(900); // a later one: the earliest holds
    const taken: number[] = [];
    for (let t = 100; t < 3000; t += 100) if (looks.look(t, t)) taken.push(t);
    expect(taken).toEqual([800]); // then quiet: the look at 800 forgot 750, and nobody said the next
  });

  it('the deadline is read in the loop clock, apart from the spacing: a clock moved forward passes it', () => {
    const looks = new NudgedLooks(fallbackPoll({ dialect: 'pglite' }, 100, 10_000), 100);
    looks.look(0, 1_000_000);
    looks.dueBy(1_060_000); // a minute ahead on the loop's clock
    expect(looks.look(100, 1_000_100)).toBe(false);
    expect(looks.look(200, 1_060_000)).toBe(true); // a test's clock moved a minute in 100 ms of real time
  });

  it('not alone: every tick looks, deadline or not', () => {
    const looks = new NudgedLooks(fallbackPoll(postgres(false), 100, 10_000), 100);
    looks.dueBy(5_000);
    for (let t = 0; t < 500; t += 100) expect(looks.look(t, t)).toBe(true);
  });

  it('the first tick alone again looks (the deadlines were not read while others shared the database)', () => {
    const ldb = postgres(false);
    const looks = new NudgedLooks(fallbackPoll(ldb, 100, 10_000), 100);
    expect(looks.look(0, 0)).toBe(true);
    ldb.isAlone = true;
    expect(looks.look(100, 100)).toBe(true); // alone again: one look, to read what comes due
    expect(looks.look(200, 200)).toBe(false);
    expect(looks.look(300, 300)).toBe(false);
  });
});
