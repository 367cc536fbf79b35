// The live feed's back-pressure on the real core: a consumer answering false gets nothing more until it
// resumes — the facts wait in the outbox — and then every fact arrives once, in order.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import type { EventView } from './types.js';

let t: TestCore;
beforeEach(async () => {
  t = await testCore();
});
afterEach(async () => {
  await t.close();
});

const echo = (message: string) => ({ kind: 'analysis', subject: { config: { fn: 'echo', message } } });
const settled = (id: string) => async () =>
  (await t.core.services.runs.get(t.admin, id)).status === 'succeeded' || undefined;

describe('events.subscribe', () => {
  it('pauses on a false answer (nothing more read) and resumes where it stopped: every fact once, in order', async () => {
    for (let i = 0; i < 4; i++) {
      const { run } = await t.core.services.runs.create(t.admin, echo(`a${i}`));
      await eventually(settled(run.id));
    }
    const paused: EventView[] = [];
    const open: EventView[] = [];
    let room = 3; // the slow consumer is full after three, until it resumes
    const slow = await t.core.services.events.subscribe(t.admin, { after: '0' }, (e) => {
      paused.push(e);
      return paused.length < room;
    });
    const fast = await t.core.services.events.subscribe(t.admin, { after: '0' }, (e) => {
      open.push(e);
      return true;
    });
    try {
      await eventually(async () => paused.length === 3 || undefined);
      // More facts, each with its NOTIFY: the open feed reads them all; the paused one reads none. One run at
      // a time, settled before the next, so that the id order is the order they arrive in (a fact committed
      // behind a higher id arrives late: test/live-feed.pg.test.ts).
      for (let i = 0; i < 4; i++) {
        const { run } = await t.core.services.runs.create(t.admin, echo(`b${i}`));
        await eventually(settled(run.id));
      }
      const all = (await t.core.services.events.list(t.admin, { after: '0', limit: 1000 })).items;
      expect(all.length).toBeGreaterThan(8);
      await eventually(async () => open.length === all.length || undefined);
      expect(paused.length).toBe(3);

      room = Number.POSITIVE_INFINITY;
      slow.resume();
      await eventually(async () => paused.length === all.length || undefined);
      expect(paused.map((e) => e.id)).toEqual(all.map((e) => e.id));
      expect(open.map((e) => e.id)).toEqual(all.map((e) => e.id));
    } finally {
      await slow.close();
      await fast.close();
    }
  });
});
