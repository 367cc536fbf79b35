// Draining ends held long-polls: a runner's lease poll and the agent service's turn-lease poll, each asked to
// wait 25 s, answer `{leases: []}` as soon as `drain()` starts — so a shutdown waits for no poll (before, it sat
// out its grace: `pnpm start` took ≈ 16 s to stop on Ctrl-C). On the real core (PGlite), through the real app.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';
import { pairTestRunner } from './testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe('draining ends held long-polls', () => {
  it('a runner lease poll and an agent turn-lease poll answer empty at drain start', async () => {
    const { credential } = await pairTestRunner(t.app, { name: 'poller' });
    const runnerPoll = call(t.app, 'POST', '/runner/v1/leases', {
      key: credential,
      body: { free: 2, waitMs: 25_000 },
    });
    const agentPoll = call(t.app, 'POST', '/internal/agent/v1/leases', {
      key: null,
      body: { holder: 'agent-host-1', free: 1, waitMs: 25_000 },
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'x-everdict-tenant': 'default' },
    });
    // Both polls are held (in flight) before the drain starts.
    await expect.poll(() => t.lifecycle.inFlight, { timeout: 10_000 }).toBe(2);
    // A grace far below the polls' 25 s: it is met only if the polls end at the drain's start.
    const drained = await t.lifecycle.drain(3_000);
    expect(drained).toEqual({ drained: true, inFlight: 0 });
    const [r, a] = await Promise.all([runnerPoll, agentPoll]);
    expect([r.status, r.body.leases]).toEqual([200, []]);
    expect([a.status, a.body.leases]).toEqual([200, []]);
  });
});
