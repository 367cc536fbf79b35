// The operator's door to shared runners (`/internal/runners/*`, the service token), on the real core (PGlite):
// it lists the shared runners, drains and revokes them as the tenant routes do theirs (revoke → the runner's
// next call is 401 and its lease's run requeues; drain → no new leases), and reaches no tenant's runner (404,
// unchanged). A tenant admin may not drain or revoke a shared runner its list shows: 403 naming the operator's door,
// nothing changed; another tenant's runner is 404 to it.
import { randomBytes } from 'node:crypto';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairingProof, pairTestRunner, type TestRunner } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const caps = (image: string) => ({ drivers: ['process'], kinds: ['command'], images: [image], slots: 1 });
const operator = (method: string, path: string) =>
  call(t.app, method, path, { key: INTERNAL_TOKEN, ...(method === 'POST' ? { body: {} } : {}) });

/** A shared runner: a token from the operator's door, paired with a new key. */
async function pairShared(name: string, image: string): Promise<TestRunner> {
  const minted = await call(t.app, 'POST', '/internal/runners/pairing-tokens', {
    key: INTERNAL_TOKEN,
    body: { name },
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  const key = generateSigningKey(randomBytes(32));
  const paired = await call(t.app, 'POST', '/runners/pair', {
    key: null,
    body: {
      token: minted.body.token,
      ...pairingProof(String(minted.body.token), key),
      name,
      capabilities: caps(image),
    },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return { id: String(paired.body.runnerId), credential: String(paired.body.credential), key };
}

async function createRun(image: string): Promise<string> {
  const created = await call(t.app, 'POST', '/runs', {
    body: { kind: 'command', subject: { command: ['true'], image } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return String((created.body.run as { id: string }).id);
}

const sharedState = async (id: string) => {
  const listed = await operator('GET', '/internal/runners');
  expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  return (listed.body.items as { id: string; state: string }[]).find((r) => r.id === id)?.state;
};

describe('the operator’s door to shared runners', () => {
  it('lists the shared runners only, and only with the service token', async () => {
    const shared = await pairShared('listed', 'list-image');
    const own = await pairTestRunner(t.app, { name: 'tenant-owned', capabilities: caps('list-image') });
    const listed = await operator('GET', '/internal/runners');
    const items = listed.body.items as { id: string; shared: boolean; tenantId: string | null }[];
    expect(items.find((r) => r.id === shared.id)).toMatchObject({ shared: true, tenantId: null });
    expect(items.some((r) => r.id === own.id)).toBe(false);
    expect(items.every((r) => r.shared)).toBe(true);
    const anonymous = await call(t.app, 'GET', '/internal/runners', { key: null });
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'invalid_service_token']);
    const byAdmin = await call(t.app, 'GET', '/internal/runners');
    expect(byAdmin.status).toBe(401);
  });

  it("a tenant admin cannot drain or revoke a shared runner: 403 naming the operator's door, nothing changed", async () => {
    const shared = await pairShared('untouchable', 'untouchable-image');
    const runId = await createRun('untouchable-image');
    const [lease] = await leaseRuns(t.app, shared, 1);
    expect(lease?.runId).toBe(runId);
    // The tenant's list shows it (it may take the tenant's runs): "not found" would contradict the list.
    const listed = (await call(t.app, 'GET', '/runners')).body.items as { id: string; shared: boolean }[];
    expect(listed.find((r) => r.id === shared.id)?.shared).toBe(true);
    for (const verb of ['drain', 'revoke']) {
      const refused = await call(t.app, 'POST', `/runners/${shared.id}/${verb}`);
      expect([refused.status, refused.body.code], JSON.stringify(refused.body)).toEqual([403, 'forbidden']);
      expect(refused.body.detail).toContain(`POST /internal/runners/${shared.id}/${verb}`);
      expect(refused.body.details).toEqual({ id: shared.id, reason: 'shared_runner' });
    }
    // Another tenant's runner is not this tenant's to know of.
    const theirs = await t.tenant('operator-door-other');
    const own = await pairTestRunner(t.app, { name: 'theirs', adminKey: theirs });
    for (const verb of ['drain', 'revoke'])
      expect((await call(t.app, 'POST', `/runners/${own.id}/${verb}`)).status).toBe(404);
    expect(await sharedState(shared.id)).toBe('active');
    const hb = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: shared.credential,
      body: { leases: [{ runId, epoch: lease?.epoch }] },
    });
    expect(hb.body).toEqual({ lost: [], draining: false });
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('running');
  });

  it('revoke: its next call is 401 and the run its lease held requeues', async () => {
    const shared = await pairShared('revoked', 'revoke-image');
    const runId = await createRun('revoke-image');
    const [lease] = await leaseRuns(t.app, shared, 1);
    expect(lease?.runId).toBe(runId);
    const revoked = await operator('POST', `/internal/runners/${shared.id}/revoke`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ id: shared.id, state: 'revoked', shared: true, requeued: [runId] });
    expect(typeof revoked.body.revokedAt).toBe('string');
    const next = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: shared.credential,
      body: { leases: [{ runId, epoch: lease?.epoch }] },
    });
    expect([next.status, next.body.code]).toEqual([401, 'invalid_runner_credential']);
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('queued');
    // Idempotent; a revoked runner is not drained back.
    expect((await operator('POST', `/internal/runners/${shared.id}/revoke`)).body.state).toBe('revoked');
    const drain = await operator('POST', `/internal/runners/${shared.id}/drain`);
    expect([drain.status, drain.body.code]).toEqual([409, 'conflict']);
    expect(await sharedState(shared.id)).toBe('revoked');
  });

  it('drain: no new leases, heartbeats answer draining, the lease held is kept', async () => {
    const shared = await pairShared('drained', 'drain-image');
    const held = await createRun('drain-image');
    const [lease] = await leaseRuns(t.app, shared, 1);
    expect(lease?.runId).toBe(held);
    const waiting = await createRun('drain-image');
    const drained = await operator('POST', `/internal/runners/${shared.id}/drain`);
    expect(drained.status, JSON.stringify(drained.body)).toBe(200);
    expect(drained.body).toMatchObject({ id: shared.id, state: 'draining', leasesHeld: 1 });
    expect(await leaseRuns(t.app, shared, 1)).toEqual([]);
    const hb = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: shared.credential,
      body: { leases: [{ runId: held, epoch: lease?.epoch }] },
    });
    expect(hb.body).toEqual({ lost: [], draining: true });
    expect((await call(t.app, 'GET', `/runs/${waiting}`)).body.status).toBe('queued');
  });

  it('reaches no tenant’s runner: 404, and the runner stays active', async () => {
    const own = await pairTestRunner(t.app, { name: 'tenant-runner', capabilities: caps('tenant-image') });
    for (const verb of ['drain', 'revoke']) {
      const refused = await operator('POST', `/internal/runners/${own.id}/${verb}`);
      expect([refused.status, refused.body.code], JSON.stringify(refused.body)).toEqual([404, 'not_found']);
    }
    const mine = (await call(t.app, 'GET', '/runners')).body.items as { id: string; state: string }[];
    expect(mine.find((r) => r.id === own.id)?.state).toBe('active');
    expect(await leaseRuns(t.app, own, 1)).toEqual([]);
  });
});
