// POST /internal/agent/v1/runs/:id/decline on the real core (migrated PGlite) through the real app: a holder
// that cannot resume a parked turn declines it — checked like every leased call (stale epoch or another
// holder: 409 `stale_lease`, nothing changed; a running turn: 409 `not_parked`), released at once (the next
// lease has the next epoch: epochs only rise; a decline counts no lost attempt), not offered to that holder again while it declares the same capabilities; once every
// paired host that could take it declined, it fails `no_compatible_host`. A retry answers the same.
// (The agent service's side, with real hosts and the record's own refusal: apps/agent test/decline-lease.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairAgentHost } from '../http/testing/agent-turns.js';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);
type Lease = { runId: string; epoch: number };

const pairHost = (name: string) => pairAgentHost(t.app, name);

const leases = async (holder: string) =>
  ((await internal('POST', '/internal/agent/v1/leases', { holder, free: 8 })).body.leases as Lease[]) ?? [];
const decline = (runId: string, holder: string, epoch: number, reason = 'manifest_mismatch') =>
  internal('POST', `/internal/agent/v1/runs/${runId}/decline`, { holder, epoch, reason });
const runOf = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body;

describe('declining a parked turn', () => {
  it('stale or running: refused, nothing changed; then released, re-offered to others only, failed when none is left', async () => {
    const hostP = await pairHost('host-p');
    const hostQ = await pairHost('host-q');
    const a = await call(t.app, 'POST', '/agents', {
      body: { name: 'decl', model: 'scripted', tools: ['ask_approval'] },
    });
    const agentId = (a.body.agent as { id: string }).id;
    const conv = await call(t.app, 'POST', '/conversations', { body: { agentId } });
    const convId = (conv.body.group as { id: string }).id;
    const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, { body: { text: 'hi' } });
    const runId = (msg.body.run as { id: string }).id;

    // An unpaired holder runs the first interval: it asks, and parks.
    const [first] = await leases('u1');
    expect(first).toMatchObject({ runId, epoch: 1 });
    const held = { holder: 'u1', epoch: 1 };
    const running = await decline(runId, 'u1', 1);
    expect(running.status).toBe(409);
    expect(running.body).toMatchObject({ code: 'conflict', details: { reason: 'not_parked' } });
    const asked = await internal('POST', `/internal/agent/v1/runs/${runId}/calls`, {
      ...held,
      callId: 'call_1',
      tool: 'ask_approval',
      input: { question: 'ship?' },
    });
    expect(asked.status).toBe(201);
    const parked = await internal('POST', '/internal/agent-run-events', {
      runId,
      event: 'awaiting_input',
      ...held,
      transcript: 'a'.repeat(64),
      transcriptBytes: 100,
      manifest: 'c'.repeat(64),
      account: { dispatched: ['call_1'], resolved: [] },
    });
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    await call(t.app, 'POST', `/runs/${runId}/input`, { body: { callId: 'call_1', approved: true } });

    // Host P leases it (epoch 2). Declines of a lease not held are stale and change nothing.
    expect(await leases(hostP)).toEqual([expect.objectContaining({ runId, epoch: 2 })]);
    for (const [holder, epoch] of [
      ['u9', 2],
      [hostP, 1],
      [hostQ, 2],
    ] as const) {
      const r = await decline(runId, holder, epoch);
      expect(r.status).toBe(409);
      expect(r.body.code).toBe('stale_lease');
    }
    const bad = await decline(runId, hostP, 2, 'no_reason');
    expect(bad.status).toBe(400);
    const beat = await internal('POST', '/internal/agent/v1/heartbeat', {
      holder: hostP,
      leases: [{ runId, epoch: 2 }],
    });
    expect(beat.body).toEqual({ lost: [] });

    // P declines: released; Q (not P) is offered it at once, at the next epoch (epochs only rise).
    const byP = await decline(runId, hostP, 2);
    expect(byP.status, JSON.stringify(byP.body)).toBe(200);
    expect(byP.body).toMatchObject({ outcome: 'requeued', reason: 'manifest_mismatch', declinedBy: [hostP] });
    expect((byP.body.run as { status: string }).status).toBe('awaiting_input');
    expect((await decline(runId, hostP, 2)).body).toMatchObject({ outcome: 'requeued' }); // a retry
    const waiting = await call(t.app, 'GET', `/runs/${runId}/input`);
    expect(waiting.body).toMatchObject({
      status: 'awaiting_input',
      pending: [],
      declined: [{ holder: hostP, reason: 'manifest_mismatch' }],
    });
    expect(await leases(hostP)).toEqual([]);
    expect(await leases(hostQ)).toEqual([expect.objectContaining({ runId, epoch: 3 })]);

    // Q declines too: no paired host is left that could take it — it fails no_compatible_host.
    const byQ = await decline(runId, hostQ, 3, 'snapshot_mismatch');
    expect(byQ.body).toMatchObject({ outcome: 'failed', declinedBy: [hostP, hostQ] });
    const run = await runOf(runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'no_compatible_host' });
    expect((await decline(runId, hostQ, 3, 'snapshot_mismatch')).body).toMatchObject({ outcome: 'failed' });
    const record = await call(t.app, 'GET', `/runs/${runId}/record`);
    expect(record.body.verify).toMatchObject({ phase: 'closed' });
    expect(await leases('u1')).toEqual([]);
  }, 120_000);
});
