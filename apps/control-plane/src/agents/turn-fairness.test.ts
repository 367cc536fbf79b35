// A crash-looping turn takes its fair place, on the real core (migrated PGlite) through the real app, with
// the core's clock moved by the test (a lease expires in clock time):
//   - a running turn whose lease is lost is requeued BEHIND its tenant's queued turns (a new finish tag, aged
//     from the requeue), not at the lane's virtual time with its first enqueue time (ahead of all of them);
//   - a parked turn whose resume lease is lost is ready again behind the parks that waited meanwhile (ready
//     since the loss), not first again by its park time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseOneTurn, parkReady, startAgentTurn, type TurnLease } from '../http/testing/agent-turns.js';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { leasePolicy, sweepExpiredLeases } from '../leases/index.js';

let t: TestApp;
let clockMs = Date.now();
beforeAll(async () => {
  t = await testApp({ clock: () => new Date(clockMs) });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const policy = leasePolicy({ maxAttempts: 5 });
const leaseOne = (holder: string) => leaseOneTurn(t.app, holder);

const runOf = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body;

/** The holder died: the clock passes its lease, and the sweep moves the turn. */
async function crash() {
  clockMs += policy.leaseMs + 1_000;
  return sweepExpiredLeases(t.core.internals.deps, policy, clockMs);
}

async function startTurn(name: string): Promise<string> {
  const runId = await startAgentTurn(t.app, name);
  clockMs += 1_000;
  return runId;
}

/** Run the turn's first interval under `lease`: it asks for approval, parks, and the approval arrives. */
async function parkReadyAs(lease: TurnLease, holder: string) {
  await parkReady(t.app, lease, holder);
  clockMs += 1_000;
}

describe('a crash-looping turn does not starve its peers', { timeout: 180_000 }, () => {
  it('a requeued turn goes behind its tenant’s queued turns', async () => {
    const first = await startTurn('crasher');
    const second = await startTurn('patient');
    expect((await leaseOne('h1')).runId).toBe(first);
    expect((await crash()).requeued).toEqual([first]);
    expect(await runOf(first)).toMatchObject({ status: 'queued' });
    // Before: the requeued turn was first again (the lane's virtual time, its first enqueue time — aged).
    const next = await leaseOne('h1');
    expect(next.runId).toBe(second);
    const after = await leaseOne('h1');
    expect(after.runId).toBe(first);
    // Leave nothing queued or running for the next case.
    for (const id of [first, second])
      expect((await call(t.app, 'POST', `/runs/${id}/cancel`, { body: {} })).status).toBeLessThan(300);
  });

  it('a parked turn whose resume was lost is ready behind the parks that waited meanwhile', async () => {
    const p1 = await startTurn('park-1');
    await parkReadyAs(await leaseOne('h2'), 'h2');
    const p2 = await startTurn('park-2');
    await parkReadyAs(await leaseOne('h2'), 'h2');

    const resume = await leaseOne('h3');
    expect(resume.runId).toBe(p1);
    expect((await crash()).parked).toEqual([p1]);
    expect(await runOf(p1)).toMatchObject({ status: 'awaiting_input' });
    // Before: p1 (parked first) was offered first again, however often its resume crashed.
    expect((await leaseOne('h3')).runId).toBe(p2);
    expect((await leaseOne('h3')).runId).toBe(p1);
  });
});
