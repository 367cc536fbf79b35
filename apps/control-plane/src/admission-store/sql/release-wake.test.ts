// A settle that lowers the running count of a tenant with queued runs wakes the claimers (settle.ts: a NOTIFY
// on the dispatch channel, payload RELEASED_PAYLOAD): here through the one-run settle inside a transaction
// (a cancel of a running command run). No queued run, no wake. Absence is shown by a marker NOTIFY sent after
// the settle committed: notifications arrive in commit order, so a wake would have come before it.
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';
import { claimAndStart } from '../../scheduler/claim-start.js';
import {
  DISPATCH_CHANNEL,
  INLINE_ONLY_NOTE,
  mayWakeInline,
  mayWakeRunners,
  RELEASED_PAYLOAD,
  RUNNERS_ONLY_NOTE,
} from '../../services/context.js';

describe('the release wake', () => {
  let t: TestCore;
  afterEach(async () => {
    await t.close();
  });

  async function startOneCommand(): Promise<string> {
    const [started] = await claimAndStart(t.core.internals.deps.db, 1, new Date(), ['command']);
    if (!started) throw new Error('nothing claimed');
    return started.runId;
  }
  const command = () =>
    t.core.services.runs.create(t.admin, { kind: 'command', subject: { command: ['true'] } });

  /** The payloads heard on the dispatch channel while `act` runs, up to a marker sent after it. */
  async function heardDuring(act: () => Promise<unknown>): Promise<string[]> {
    const heard: string[] = [];
    let marked: () => void = () => undefined;
    const marker = new Promise<void>((r) => {
      marked = r;
    });
    const unlisten = await t.core.internals.ldb.listen(DISPATCH_CHANNEL, (payload) => {
      if (payload === 'marker') marked();
      else heard.push(payload);
    });
    try {
      await act();
      await t.core.internals.ldb.notify(DISPATCH_CHANNEL, 'marker');
      await marker;
    } finally {
      await unlisten();
    }
    return heard;
  }

  it('a cancel that frees capacity a queued run waits for announces the release', async () => {
    t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 1 } });
    await command();
    await command();
    const running = await startOneCommand();
    const heard = await heardDuring(() => t.core.services.runs.cancel(t.admin, running));
    // Only a command run is queued: a runners' wake (the inline dispatch loops let it pass).
    expect(heard).toContain(`${RELEASED_PAYLOAD}${RUNNERS_ONLY_NOTE}`);
    expect(mayWakeRunners(heard.find((p) => p.startsWith(RELEASED_PAYLOAD)) ?? '')).toBe(true);
  });

  const analysis = (message: string) =>
    t.core.services.runs.create(t.admin, { kind: 'analysis', subject: { config: { fn: 'echo', message } } });

  it('with runs of both lanes queued, the wake is for both', async () => {
    t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 1 } });
    await command();
    await command();
    await analysis('q');
    const running = await startOneCommand();
    const heard = await heardDuring(() => t.core.services.runs.cancel(t.admin, running));
    expect(heard).toContain(RELEASED_PAYLOAD);
    expect([mayWakeRunners(RELEASED_PAYLOAD), mayWakeInline(RELEASED_PAYLOAD)]).toEqual([true, true]);
  });

  it('with only inline-lane runs queued, the runners are not woken', async () => {
    t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 1 } });
    await analysis('a');
    await analysis('b');
    const [started] = await claimAndStart(t.core.internals.deps.db, 1, new Date(), ['analysis']);
    if (!started) throw new Error('nothing claimed');
    const heard = await heardDuring(() => t.core.services.runs.cancel(t.admin, started.runId));
    const wake = heard.find((p) => p.startsWith(RELEASED_PAYLOAD));
    expect(wake).toBe(`${RELEASED_PAYLOAD}${INLINE_ONLY_NOTE}`);
    expect([mayWakeRunners(wake ?? ''), mayWakeInline(wake ?? '')]).toEqual([false, true]);
  });

  it('with nothing queued for the tenant, the same cancel does not', async () => {
    t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 1 } });
    await command();
    const running = await startOneCommand();
    const heard = await heardDuring(() => t.core.services.runs.cancel(t.admin, running));
    expect(heard).not.toContain(RELEASED_PAYLOAD);
  });
});
