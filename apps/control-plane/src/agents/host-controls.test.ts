// Agent-host controls on the real core (migrated PGlite, one core for this file, started with
// EVERDICT_AGENT_REQUIRE_PAIRED=1) through the real app: a tenant admin lists its agent hosts and revokes one
// — the host's next call is 401 `invalid_agent_host` in the problem shape a revoked runner gets, and the
// turn its lease held is requeued for another host; a member's or a foreign revoke changes nothing. Under the
// switch an unpaired holder is refused with the typed error and the turn it asked for stays queued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';
import { agentHostPairingProof } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ agents: { requirePaired: true } });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);
type Lease = { runId: string; epoch: number };
type Host = { id: string; state: string; leasesHeld: number; shared: boolean; requeued?: string[] };

/** A host of tenant `default`, paired with a token its admin minted. */
async function pairHost(name: string): Promise<string> {
  const minted = await call(t.app, 'POST', '/runners/pairing-tokens', { body: {} });
  expect(minted.status).toBe(201);
  const token = String(minted.body.token);
  const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token, ...agentHostPairingProof(token), name },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return paired.body.hostId as string;
}

async function queueTurn(): Promise<string> {
  const a = await call(t.app, 'POST', '/agents', { body: { name: 'ctl', model: 'scripted', tools: [] } });
  const agentId = (a.body.agent as { id: string }).id;
  const conv = await call(t.app, 'POST', '/conversations', { body: { agentId } });
  const convId = (conv.body.group as { id: string }).id;
  const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, { body: { text: 'hi' } });
  expect(msg.status).toBe(202);
  return (msg.body.run as { id: string }).id;
}

const lease = async (holder: string) => internal('POST', '/internal/agent/v1/leases', { holder, free: 1 });
const statusOf = async (runId: string) => (await call(t.app, 'GET', `/runs/${runId}`)).body.status;
const hosts = async () => (await call(t.app, 'GET', '/agents/hosts')).body.items as Host[];

describe('agent hosts: list and revoke', () => {
  it('revoked: the next call is 401 in the runner problem shape, and the turn it held is requeued', async () => {
    const hostId = await pairHost('to-revoke');
    const runId = await queueTurn();
    const got = await lease(hostId);
    expect(got.status).toBe(200);
    expect((got.body.leases as Lease[]).map((l) => l.runId)).toEqual([runId]);
    expect(await statusOf(runId)).toBe('running');
    expect((await hosts()).find((h) => h.id === hostId)).toMatchObject({
      state: 'active',
      leasesHeld: 1,
      shared: false,
    });

    // Refused, nothing changes: a member key (403), an unknown host (404), another tenant's admin (404).
    const member = await t.key('member');
    const asMember = await call(t.app, 'POST', `/agents/hosts/${hostId}/revoke`, { key: member });
    expect([asMember.status, asMember.body.code]).toEqual([403, 'forbidden']);
    const unknown = await call(t.app, 'POST', '/agents/hosts/agh_nope/revoke');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
    const foreign = await call(t.app, 'POST', `/agents/hosts/${hostId}/revoke`, {
      key: await t.tenant('controls-other'),
    });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'not_found']);
    expect((await hosts()).find((h) => h.id === hostId)).toMatchObject({ state: 'active', leasesHeld: 1 });
    expect(await statusOf(runId)).toBe('running');

    const revoked = await call(t.app, 'POST', `/agents/hosts/${hostId}/revoke`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ id: hostId, state: 'revoked', requeued: [runId], leasesHeld: 0 });
    expect(await statusOf(runId)).toBe('queued');

    // The next call: 401, the problem a revoked runner's credential gets (same members, its own code).
    const runner = await call(t.app, 'POST', '/runner/v1/leases', {
      key: 'evr_revoked-or-unknown',
      body: { free: 1 },
    });
    const next = await lease(hostId);
    expect(next.status).toBe(401);
    expect(next.type).toBe(runner.type);
    expect(next.body).toMatchObject({
      type: 'urn:everdict:problem:invalid_agent_host',
      title: runner.body.title,
      status: runner.body.status,
      code: 'invalid_agent_host',
      details: { reason: 'revoked', holder: hostId },
    });
    expect(Object.keys(runner.body).every((k) => k in next.body)).toBe(true);
    const beat = await internal('POST', '/internal/agent/v1/heartbeat', {
      holder: hostId,
      leases: [{ runId, epoch: 1 }],
    });
    expect([beat.status, beat.body.code]).toEqual([401, 'invalid_agent_host']);
    const report = await internal('POST', '/internal/agent-run-events', {
      runId,
      holder: hostId,
      epoch: 1,
      event: 'succeeded',
      outputs: { summary: 'late' },
    });
    expect([report.status, report.body.code]).toEqual([401, 'invalid_agent_host']);
    expect(await statusOf(runId)).toBe('queued');

    // Another host takes the requeued turn at the next epoch; a second revoke is idempotent.
    const other = await pairHost('successor');
    const again = await lease(other);
    expect((again.body.leases as Lease[]).map((l) => [l.runId, l.epoch])).toEqual([[runId, 2]]);
    const twice = await call(t.app, 'POST', `/agents/hosts/${hostId}/revoke`);
    expect(twice.body).toMatchObject({ state: 'revoked', requeued: [] });
    const keys = (await call(t.app, 'GET', '/keys', { key: null })).body.keys as {
      id: string;
      revokedAt?: string;
    }[];
    expect(keys.find((k) => k.id === hostId)?.revokedAt).toEqual(expect.any(String));
  });
});

describe("a shared agent host is the operator's", () => {
  it('a tenant admin is refused 403 naming the door; the operator lists it and revokes it, its turn requeued', async () => {
    // Paired with a token the service token minted: a shared host (any tenant's turns).
    const minted = await internal('POST', '/internal/runners/pairing-tokens', {});
    const token = String(minted.body.token);
    const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token, ...agentHostPairingProof(token), name: 'shared-host' },
    });
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
    const hostId = paired.body.hostId as string;
    const runId = await queueTurn();
    expect(((await lease(hostId)).body.leases as Lease[]).map((l) => l.runId)).toEqual([runId]);

    // The tenant's list shows it, so its admin is told whose it is (not "not found"); nothing changes.
    expect((await hosts()).find((h) => h.id === hostId)).toMatchObject({ shared: true, state: 'active' });
    const refused = await call(t.app, 'POST', `/agents/hosts/${hostId}/revoke`);
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect(refused.body.details).toEqual({ id: hostId, reason: 'shared_agent_host' });
    expect(refused.body.detail).toContain(`POST /internal/agents/hosts/${hostId}/revoke`);
    expect(await statusOf(runId)).toBe('running');

    // The operator's door lists the shared hosts only, and reaches no tenant's host.
    const listed = await internal('GET', '/internal/agents/hosts');
    const ids = (listed.body.items as Host[]).map((h) => h.id);
    expect(ids).toContain(hostId);
    const own = await pairHost('tenant-host');
    expect(ids).not.toContain(own);
    const theirs = await internal('POST', `/internal/agents/hosts/${own}/revoke`);
    expect([theirs.status, theirs.body.code]).toEqual([404, 'not_found']);

    const revoked = await internal('POST', `/internal/agents/hosts/${hostId}/revoke`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({
      id: hostId,
      state: 'revoked',
      revokedBy: 'operator',
      requeued: [runId],
    });
    expect(await statusOf(runId)).toBe('queued');
    expect((await lease(hostId)).status).toBe(401);
    // The next test leases its own turn: this one does not wait in the queue before it.
    expect((await call(t.app, 'POST', `/runs/${runId}/cancel`, { body: {} })).status).toBe(200);
  });
});

describe('EVERDICT_AGENT_REQUIRE_PAIRED=1', () => {
  it('refuses an unpaired holder with invalid_agent_host; the turn stays queued for a paired host', async () => {
    const runId = await queueTurn();
    const refused = await lease('plain-host');
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({
      code: 'invalid_agent_host',
      details: { reason: 'unpaired', holder: 'plain-host' },
    });
    const beat = await internal('POST', '/internal/agent/v1/heartbeat', { holder: 'plain-host', leases: [] });
    expect([beat.status, beat.body.code]).toEqual([401, 'invalid_agent_host']);
    expect(await statusOf(runId)).toBe('queued');
    const paired = await pairHost('paired');
    const got = await lease(paired);
    expect((got.body.leases as Lease[]).map((l) => l.runId)).toContain(runId);
  });
});
