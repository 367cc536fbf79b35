// What a change of the host set does to the turns, on the real core (migrated PGlite) through the real app,
// each case in its own tenant (tenant-scoped hosts see only its turns):
//   - a revoke answers the fate of EVERY turn the host held: a running one `requeued`, a parked one leased
//     for its resume `parked` (its lost resume counted; still parked and ready);
//   - a decline bars its holder only while it presents the capability set it declined under: the same set
//     (or none, when it declared none) is not offered the turn again; a changed set is;
//   - a revoke re-checks the declined turns: with the last host that had not declined one gone, it fails
//     `no_compatible_host` (as a decline that leaves no host does).
import { randomBytes } from 'node:crypto';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown, tenant?: string) =>
  callInternal(t.app, method, path, body, tenant);
type Lease = { runId: string; epoch: number };

/** A host of the tenant whose admin key is `key`. */
async function pairHost(key: string, name: string): Promise<string> {
  const minted = await call(t.app, 'POST', '/runners/pairing-tokens', { key, body: {} });
  expect(minted.status).toBe(201);
  const signing = generateSigningKey(randomBytes(32));
  const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token: minted.body.token, publicKey: signing.publicKey, name },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return paired.body.hostId as string;
}

async function startTurn(key: string): Promise<string> {
  const a = await call(t.app, 'POST', '/agents', {
    key,
    body: { name: 'hc', model: 'scripted', tools: ['ask_approval'] },
  });
  const agentId = (a.body.agent as { id: string }).id;
  const conv = await call(t.app, 'POST', '/conversations', { key, body: { agentId } });
  const convId = (conv.body.group as { id: string }).id;
  const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, { key, body: { text: 'hi' } });
  expect(msg.status).toBe(202);
  return (msg.body.run as { id: string }).id;
}

const lease = async (holder: string, capabilities?: string[], free = 8) => {
  const r = await internal('POST', '/internal/agent/v1/leases', {
    holder,
    free,
    ...(capabilities ? { capabilities } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.leases as Lease[];
};

/**
 * The turn's first interval, by an unpaired holder (a paired host's report must carry its signed attestation):
 * it asks for approval and parks; the approval arrives (ready). Nothing else of any tenant may be queued.
 */
async function parkReady(tenant: string, key: string, runId: string) {
  const holder = `u-${tenant}`;
  const [l] = await lease(holder, undefined, 1);
  expect(l?.runId).toBe(runId);
  if (!l) throw new Error('no lease');
  const held = { holder, epoch: l.epoch };
  const asked = await internal('POST', `/internal/agent/v1/runs/${l.runId}/calls`, {
    ...held,
    callId: 'call_1',
    tool: 'ask_approval',
    input: { question: 'ok?' },
  });
  expect(asked.status, JSON.stringify(asked.body)).toBe(201);
  const parked = await internal(
    'POST',
    '/internal/agent-run-events',
    {
      runId: l.runId,
      event: 'awaiting_input',
      ...held,
      transcript: 'a'.repeat(64),
      transcriptBytes: 100,
      manifest: 'c'.repeat(64),
      account: { dispatched: ['call_1'], resolved: [] },
    },
    tenant,
  );
  expect(parked.status, JSON.stringify(parked.body)).toBe(200);
  const answered = await call(t.app, 'POST', `/runs/${l.runId}/input`, {
    key,
    body: { callId: 'call_1', approved: true },
  });
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
}

const decline = (runId: string, holder: string, epoch: number, capabilities?: string[]) =>
  internal('POST', `/internal/agent/v1/runs/${runId}/decline`, {
    holder,
    epoch,
    reason: 'manifest_mismatch',
    ...(capabilities ? { capabilities } : {}),
  });
const runOf = async (key: string, id: string) => (await call(t.app, 'GET', `/runs/${id}`, { key })).body;

describe('revoking an agent host', () => {
  it('answers the fate of every turn it held: running → requeued, parked for its resume → parked', async () => {
    const TENANT = 'hc-revoke';
    const key = await t.tenant(TENANT);
    const host = await pairHost(key, 'holder');
    const parkedTurn = await startTurn(key);
    await parkReady(TENANT, key, parkedTurn);
    const runningTurn = await startTurn(key);
    const held = await lease(host);
    expect(held.map((l) => l.runId).sort()).toEqual([parkedTurn, runningTurn].sort());
    expect(await runOf(key, runningTurn)).toMatchObject({ status: 'running' });
    expect(await runOf(key, parkedTurn)).toMatchObject({ status: 'awaiting_input' });

    const revoked = await call(t.app, 'POST', `/agents/hosts/${host}/revoke`, { key });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    // Before: only `requeued: [runningTurn]`; the parked turn (its lost resume counted) was not mentioned.
    expect(revoked.body).toMatchObject({
      state: 'revoked',
      requeued: [runningTurn],
      parked: [parkedTurn],
      failed: [],
      noCompatibleHost: [],
    });
    expect(
      (revoked.body.turns as { runId: string }[]).sort((a, b) => a.runId.localeCompare(b.runId)),
    ).toEqual(
      [
        { runId: runningTurn, outcome: 'requeued', status: 'queued' },
        { runId: parkedTurn, outcome: 'parked', status: 'awaiting_input' },
      ].sort((a, b) => a.runId.localeCompare(b.runId)),
    );
    expect(await runOf(key, runningTurn)).toMatchObject({ status: 'queued' });
    expect(await runOf(key, parkedTurn)).toMatchObject({ status: 'awaiting_input' });
    for (const id of [runningTurn, parkedTurn])
      expect((await call(t.app, 'POST', `/runs/${id}/cancel`, { key, body: {} })).status).toBeLessThan(300);
  });

  it('fails a declined turn no_compatible_host once the last host that had not declined it is revoked', async () => {
    const TENANT = 'hc-strand';
    const key = await t.tenant(TENANT);
    const decliner = await pairHost(key, 'decliner');
    const other = await pairHost(key, 'other');
    const turn = await startTurn(key);
    await parkReady(TENANT, key, turn);
    const [resume] = await lease(decliner);
    expect(resume?.runId).toBe(turn);
    const declined = await decline(turn, decliner, (resume as Lease).epoch);
    expect(declined.body).toMatchObject({ outcome: 'requeued', declinedBy: [decliner] });

    const revoked = await call(t.app, 'POST', `/agents/hosts/${other}/revoke`, { key });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ turns: [], noCompatibleHost: [turn] });
    // Before: the turn stayed parked for ever — the only host left had declined it.
    const run = await runOf(key, turn);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'no_compatible_host' } });
    expect((await call(t.app, 'GET', `/runs/${turn}/record`, { key })).body.verify).toMatchObject({
      phase: 'closed',
    });
  });
});

describe('a decline is keyed to the capability set its holder declined under', () => {
  it('the same set is not offered the turn again; a changed set is', async () => {
    const TENANT = 'hc-caps';
    const key = await t.tenant(TENANT);
    const host = await pairHost(key, 'upgrading');
    const spare = await pairHost(key, 'spare'); // keeps a compatible host around: the decline requeues
    const turn = await startTurn(key);
    const v1 = ['everdict-agent/transcript/1'];
    await parkReady(TENANT, key, turn);
    const [resume] = await lease(host, v1);
    expect(resume?.runId).toBe(turn);
    const declined = await decline(turn, host, (resume as Lease).epoch, v1);
    expect(declined.status, JSON.stringify(declined.body)).toBe(200);
    expect(declined.body).toMatchObject({ outcome: 'requeued' });

    // The same capability set (in any order, with repeats): still declined.
    expect(await lease(host, [...v1, ...v1])).toEqual([]);
    // Upgraded (a new protocol it can resume): offered again, at the next epoch.
    const upgraded = await lease(host, ['everdict-agent/transcript/2', ...v1]);
    expect(upgraded).toEqual([{ ...upgraded[0], runId: turn, epoch: (resume as Lease).epoch + 1 }]);

    // It declines again under the new set: that set is now barred too; none declared is a set of its own.
    expect(
      (await decline(turn, host, (resume as Lease).epoch + 1, ['everdict-agent/transcript/2', ...v1])).body,
    ).toMatchObject({ outcome: 'requeued' });
    expect(await lease(host, ['everdict-agent/transcript/2', ...v1])).toEqual([]);
    const [bare] = await lease(host);
    expect(bare?.runId).toBe(turn);
    expect((await decline(turn, host, (bare as Lease).epoch)).body).toMatchObject({ outcome: 'requeued' });
    expect(await lease(host)).toEqual([]);
    expect((await lease(spare)).map((l) => l.runId)).toEqual([turn]);

    const bad = await internal('POST', '/internal/agent/v1/leases', {
      holder: host,
      free: 1,
      capabilities: [''],
    });
    expect(bad.status).toBe(400);
  });
});
