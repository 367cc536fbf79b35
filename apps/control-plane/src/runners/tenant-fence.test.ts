// What a runner learns of runs it does not hold: a tenant-scoped runner calling with another tenant's run id (its
// events, an artifact, a completion — or a replay of that run's settled completion re-labelled with its own key)
// is answered as for a run that does not exist: 409 `stale_lease` with no epoch, and nothing of the run. And a
// drained runner leaves the placement index: a run only it could take is not admitted. A pairing token pairs
// until its 15 minutes end, not after.
import { randomBytes } from 'node:crypto';
import { encodeAttestationBody, generateSigningKey } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairingProof, pairTestRunner, signTestInterval } from '../http/testing/runners.js';
import { PAIRING_TOKEN_TTL_MS } from './registry.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['fence-image'], slots: 1 };

async function createRun(image: string): Promise<{ status: number; runId: string }> {
  const created = await call(t.app, 'POST', '/runs', {
    body: { kind: 'command', subject: { command: ['true'], image } },
  });
  return { status: created.status, runId: String((created.body.run as { id?: string } | undefined)?.id) };
}

describe('a tenant-scoped runner and another tenant’s runs', () => {
  it('a replay of another tenant’s settled completion re-labelled with its own key is 409, the run not answered', async () => {
    const owner = await pairTestRunner(t.app, { name: 'owner', capabilities: CAPS });
    const { runId } = await createRun('fence-image');
    const [lease] = await leaseRuns(t.app, owner, 1);
    expect(lease?.runId).toBe(runId);
    if (!lease) return;
    const wire = encodeAttestationBody(signTestInterval(lease, owner.key.secretKey).body);
    const settled = await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
      key: owner.credential,
      body: { epoch: lease.epoch, outputs: {}, attestation: wire },
    });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);

    const other = await pairTestRunner(t.app, {
      name: 'other',
      capabilities: CAPS,
      adminKey: await t.tenant('fence-other'),
    });
    // The attestation's address does not cover its signature: the same address under another key.
    const relabelled = { ...wire, signature: { ...wire.signature!, key: other.key.publicKey } };
    const replay = { epoch: lease.epoch, outputs: {}, attestation: relabelled };
    const single = await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
      key: other.credential,
      body: replay,
    });
    expect(single.status, JSON.stringify(single.body)).toBe(409);
    expect(single.body.code).toBe('stale_lease');
    expect(single.body.run).toBeUndefined();
    expect((single.body.details as { current: unknown }).current).toBeNull();
    const batch = await call(t.app, 'POST', '/runner/v1/completions', {
      key: other.credential,
      body: { items: [{ runId, ...replay }] },
    });
    expect(batch.status).toBe(200);
    const [item] = batch.body.results as { status: number; outcome: string; run?: unknown }[];
    expect(item).toMatchObject({ status: 409, outcome: 'refused' });
    expect(item?.run).toBeUndefined();

    // Nor a shared runner's (it may see every tenant's runs, but it did not sign this one).
    const minted = await call(t.app, 'POST', '/internal/runners/pairing-tokens', {
      key: INTERNAL_TOKEN,
      body: {},
    });
    expect(minted.status).toBe(201);
    const sharedKey = generateSigningKey(randomBytes(32));
    const paired = await call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: {
        token: minted.body.token,
        ...pairingProof(String(minted.body.token), sharedKey),
        name: 'shared',
        capabilities: CAPS,
      },
    });
    expect(paired.status).toBe(201);
    const byShared = await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
      key: String(paired.body.credential),
      body: {
        ...replay,
        attestation: { ...wire, signature: { ...wire.signature!, key: sharedKey.publicKey } },
      },
    });
    expect(byShared.status, JSON.stringify(byShared.body)).toBe(409);
    expect(byShared.body.run).toBeUndefined();

    // The owner's own replay of the very attestation is still the idempotent 200.
    const again = await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
      key: owner.credential,
      body: { epoch: lease.epoch, outputs: {}, attestation: wire },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });

  it('events, an artifact or a completion for another tenant’s running run answer no epoch of it', async () => {
    const owner = await pairTestRunner(t.app, { name: 'owner2', capabilities: CAPS });
    const { runId } = await createRun('fence-image');
    const [lease] = await leaseRuns(t.app, owner, 1);
    expect(lease?.runId).toBe(runId);
    if (!lease) return;
    const other = await pairTestRunner(t.app, {
      name: 'other2',
      capabilities: CAPS,
      adminKey: await t.tenant('fence-other-2'),
    });
    const answers = [
      await call(t.app, 'POST', `/runner/v1/runs/${runId}/events`, {
        key: other.credential,
        body: { epoch: 7, events: [] },
      }),
      await call(t.app, 'PUT', `/runner/v1/runs/${runId}/artifacts?epoch=7&path=a.txt`, {
        key: other.credential,
        body: 'bytes',
        headers: { 'content-type': 'application/octet-stream' },
      }),
      await call(t.app, 'POST', `/runner/v1/runs/${runId}/complete`, {
        key: other.credential,
        body: {
          epoch: 7,
          outputs: {},
          attestation: encodeAttestationBody(signTestInterval(lease, other.key.secretKey).body),
        },
      }),
    ];
    for (const a of answers) {
      expect(a.status, JSON.stringify(a.body)).toBe(409);
      expect(a.body.code).toBe('stale_lease');
      expect((a.body.details as { current: unknown }).current).toBeNull();
      expect(String(a.body.detail)).not.toMatch(/\(\d+\)/);
    }
    // The owner's lease is untouched.
    const hb = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: owner.credential,
      body: { leases: [{ runId, epoch: lease.epoch }] },
    });
    expect(hb.body).toEqual({ lost: [], draining: false });
  });
});

describe('drain and the placement index', () => {
  it('a run only a drained runner could take is 422 no_placement, not admitted to wait forever', async () => {
    const r = await pairTestRunner(t.app, {
      name: 'drained',
      capabilities: { ...CAPS, images: ['drained-only'] },
    });
    // Placeable while it is active (and that positive answer is now remembered by this replica).
    expect((await createRun('drained-only')).status).toBe(201);
    const drained = await call(t.app, 'POST', `/runners/${r.id}/drain`);
    expect(drained.status).toBe(200);
    const refused = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'], image: 'drained-only' } },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.code).toBe('no_placement');
    // It says why: the runner that would take it is draining.
    expect(refused.body.detail).toContain(`${r.id} (drained) would, but draining takes no new runs`);
    expect(refused.body.details).toMatchObject({ draining: [r.id] });
    // Its runs in flight still finish: the run admitted before the drain is granted to nobody new, and the
    // drained runner itself is granted nothing.
    expect(await leaseRuns(t.app, r, 1)).toEqual([]);
  });
});

describe('a pairing token’s 15 minutes', () => {
  it('pairs just before they end and not once they have', async () => {
    let now = Date.parse('2026-12-05T06:00:00.000Z');
    const timed = await testApp({ executors: [], clock: () => new Date(now) });
    try {
      const pairWith = async (token: unknown) =>
        call(timed.app, 'POST', '/runners/pair', {
          key: null,
          body: {
            token,
            ...pairingProof(String(token)),
            name: 'timed',
            capabilities: CAPS,
          },
        });
      const early = await call(timed.app, 'POST', '/runners/pairing-tokens', { body: {} });
      const late = await call(timed.app, 'POST', '/runners/pairing-tokens', { body: {} });
      expect(late.body.expiresAt).toBe('2026-12-05T06:15:00.000Z');
      now += PAIRING_TOKEN_TTL_MS - 1;
      expect((await pairWith(early.body.token)).status).toBe(201);
      now += 1;
      const refused = await pairWith(late.body.token);
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('invalid_pairing_token');
    } finally {
      await timed.close();
    }
  }, 300_000);
});
