// A waiting turn long-poll (POST /internal/agent/v1/leases with `waitMs`) is answered by a wake, not by its poll:
// this core's long-polls look again only every 10 minutes (`agents.pollMs`), so each case passes only if what
// made a turn leasable woke the poll — a new turn, an approval answered, a resume declined, a caused run
// settled — and it fails on a poll that only sleeps (as it did every 200 ms before turn-waiters.ts). Each poll is
// known to be asleep (the core's waiters count it) before the wake is caused: no sleeping in the test.
// On the real core (a migrated PGlite) through the real app.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  askApproval,
  leaseOneTurn,
  pairAgentHost,
  parkTurn,
  startAgentTurn,
} from '../http/testing/agent-turns.js';
import { ADMIN_KEY, call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ agents: { pollMs: 600_000, recheckGapMs: 0 } });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

type Lease = { runId: string; epoch: number };
const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);

/** A long-poll by `holder`, asleep in the core once this resolves; `answer` is its answer. */
async function waiting(holder: string): Promise<{ answer: Promise<Lease[]> }> {
  const before = t.core.internals.turnWaiters.size;
  const answer = internal('POST', '/internal/agent/v1/leases', { holder, free: 1, waitMs: 20_000 }).then(
    (r) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.leases as Lease[];
    },
  );
  await vi.waitFor(() => expect(t.core.internals.turnWaiters.size).toBe(before + 1), { timeout: 10_000 });
  return { answer };
}

/** A turn leased by `holder`, its approval asked and parked (not ready: the approval is unanswered). */
async function parked(holder: string, name: string): Promise<Lease> {
  const runId = await startAgentTurn(t.app, name);
  const lease = await leaseOneTurn(t.app, holder);
  expect(lease.runId).toBe(runId);
  await askApproval(t.app, lease, holder);
  await parkTurn(t.app, lease, holder, ['call_1']);
  return lease;
}

describe('a waiting turn long-poll is woken', () => {
  it('by a new turn', async () => {
    const { answer } = await waiting('host-new');
    const runId = await startAgentTurn(t.app, 'woken-by-create');
    expect(await answer).toEqual([expect.objectContaining({ runId, epoch: 1 })]);
  }, 30_000);

  it('by an approval answered', async () => {
    const lease = await parked('host-a', 'woken-by-answer');
    const { answer } = await waiting('host-b');
    const answered = await call(t.app, 'POST', `/runs/${lease.runId}/input`, {
      body: { callId: 'call_1', approved: true },
    });
    expect(answered.status).toBe(200);
    expect(await answer).toEqual([expect.objectContaining({ runId: lease.runId, epoch: 2 })]);
  }, 30_000);

  it('by a resume declined (offered to the other holders)', async () => {
    const first = await parked('host-c', 'woken-by-decline');
    const answered = await call(t.app, 'POST', `/runs/${first.runId}/input`, {
      body: { callId: 'call_1', approved: true },
    });
    expect(answered.status).toBe(200);
    const resume = await leaseOneTurn(t.app, 'host-c');
    expect(resume).toMatchObject({ runId: first.runId, epoch: 2 });
    const { answer } = await waiting('host-d');
    const declined = await internal('POST', `/internal/agent/v1/runs/${first.runId}/decline`, {
      holder: 'host-c',
      epoch: resume.epoch,
      reason: 'manifest_mismatch',
    });
    expect(declined.status, JSON.stringify(declined.body)).toBe(200);
    expect(await answer).toEqual([expect.objectContaining({ runId: first.runId, epoch: 3 })]);
  }, 30_000);

  it('by the caused run it waits on settling', async () => {
    const runId = await startAgentTurn(t.app, 'woken-by-settle', ADMIN_KEY, ['run_command']);
    const lease = await leaseOneTurn(t.app, 'host-e');
    const held = { holder: 'host-e', epoch: lease.epoch };
    const started = await internal('POST', `/internal/agent/v1/runs/${runId}/calls`, {
      ...held,
      callId: 'cmd_1',
      tool: 'run_command',
      input: { command: ['true'] },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const caused = started.body.runId as string;
    await parkTurn(t.app, lease, 'host-e', ['cmd_1']);
    const { answer } = await waiting('host-f');
    // The caused command run waits queued (no runner here); cancelling it settles it: the turn is ready.
    const cancelled = await call(t.app, 'POST', `/runs/${caused}/cancel`, { body: { reason: 'enough' } });
    expect(cancelled.status).toBe(200);
    expect(await answer).toEqual([expect.objectContaining({ runId, epoch: 2 })]);
  }, 30_000);

  it('a paired host too (its tenant scope is read at every look)', async () => {
    const host = await pairAgentHost(t.app, 'paired-waiter');
    const { answer } = await waiting(host);
    const runId = await startAgentTurn(t.app, 'woken-paired');
    expect(await answer).toEqual([expect.objectContaining({ runId })]);
  }, 30_000);
});
