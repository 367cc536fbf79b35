// Pairing input the placement index must hold (a kind listed twice; an image too long for a btree key) and a
// revoke racing the revoked runner's own calls: a heartbeat and a completion that were authenticated before the
// revoke committed (called here at the service level with the identity read before it) are refused, and the
// revoke's expired lease is requeued by the sweep.
import { randomBytes } from 'node:crypto';
import {
  buildAttestation,
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  signAttestation,
} from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../errors.js';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import { mintPairingToken, pairingProof } from '../http/testing/runners.js';
import { leasePolicy } from '../leases/policy.js';
import { revokeRunner } from './admin.js';
import { journalRootOf } from './intervals.js';
import { expireHolder, requeueExpired } from './leases.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 2 };

const mint = () => mintPairingToken(t.app);

const pairBody = (token: string, capabilities: object) => ({
  token,
  ...pairingProof(token),
  name: 'r',
  capabilities,
});

const indexRows = (runnerId: string) =>
  t.core.internals.deps.db
    .selectFrom('runner_images')
    .select(['kind', 'image'])
    .where('runner_id', '=', runnerId)
    .orderBy('kind')
    .orderBy('image')
    .execute();

/** The refusal a promise rejects with (fails the test when it resolves). */
async function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
}

describe('pairing input', () => {
  it('a kind (or an image) listed twice is one placement row: 201, not a primary key violation', async () => {
    const token = await mint();
    const paired = await call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: pairBody(token, {
        ...CAPS,
        kinds: ['command', 'command', 'eval'],
        images: ['default', 'default'],
      }),
    });
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
    expect(await indexRows(String(paired.body.runnerId))).toEqual([
      { kind: 'command', image: 'default' },
      { kind: 'eval', image: 'default' },
    ]);
    // The token was spent by that pairing.
    const again = await call(t.app, 'POST', '/runners/pair', { key: null, body: pairBody(token, CAPS) });
    expect(again.body.code).toBe('invalid_pairing_token');
  });

  it('an image over 1000 UTF-8 bytes is 400 (1000 CJK characters: 3000 bytes); the token stays unspent', async () => {
    const token = await mint();
    const cjk = Array.from({ length: 1000 }, (_, i) =>
      String.fromCodePoint(0x4e00 + ((i * 7919) % 20_000)),
    ).join('');
    const refused = await call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: pairBody(token, { ...CAPS, images: [cjk] }),
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    const paired = await call(t.app, 'POST', '/runners/pair', { key: null, body: pairBody(token, CAPS) });
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  });
});

describe('a revoke racing the revoked runner', () => {
  it('a heartbeat after the revoke does not revive its lease; a completion or events are refused; the run requeues', async () => {
    const runners = t.core.services.runners;
    if (!runners) throw new Error('no runner service');
    const deps = t.core.internals.deps;
    const key = generateSigningKey(randomBytes(32));
    const token = await mint();
    const { runnerId, credential } = await runners.pair({
      token,
      ...pairingProof(token, key),
      name: 'racing',
      capabilities: { ...CAPS, images: ['race-image'] },
    });
    const created = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'], image: 'race-image' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = String((created.body.run as { id: string }).id);
    // Authenticated before the revoke: the identity an in-flight call carries.
    const runner = await runners.authenticate(credential);
    const [lease] = (await runners.leases(runner, { free: 1 })).leases;
    expect(lease?.runId).toBe(runId);
    if (!lease) return;

    // The revoke's transaction (the real one), committed; its sweep not yet run.
    const admin = await t.core.services.auth.authenticate(ADMIN_KEY);
    const { expired } = await revokeRunner(deps, admin, runnerId, expireHolder);
    expect(expired).toEqual([runId]);

    expect(await runners.heartbeat(runner, { leases: [{ runId, epoch: lease.epoch }] })).toEqual({
      lost: [runId],
      draining: false,
    });
    const { attestation } = buildAttestation({
      unitId: lease.unitId as Hex,
      grantsId: lease.grantsId as Hex,
      recordHead: lease.recordHead as Hex,
      startedMs: 1_764_547_200_000n,
      endedMs: 1_764_547_200_250n,
      activeUj: 1_000n,
      provenance: 'estimated',
      meter: 'cgroup-cpu-model',
      journalRoot: journalRootOf([]) as Hex,
      outcome: 'succeeded',
      exitCode: 0,
    });
    const body = encodeAttestationBody(signAttestation(attestation, key.secretKey).body);
    const completion = { epoch: lease.epoch, outputs: {}, attestation: body };
    for (const refused of [
      await refusal(runners.complete(runner, runId, completion)),
      await refusal(runners.events(runner, runId, { epoch: lease.epoch, events: [] })),
    ]) {
      expect(isControlPlaneError(refused) && [refused.code, refused.httpStatus]).toEqual([
        'stale_lease',
        409,
      ]);
    }
    const batch = await runners.completeMany(runner, { items: [{ runId, ...completion }] });
    const [outcome] = batch.outcomes;
    expect(outcome && 'error' in outcome && isControlPlaneError(outcome.error) && outcome.error.code).toBe(
      'stale_lease',
    );
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('running');

    // The revoke's sweep: the lease is still expired, so the run requeues.
    expect(await requeueExpired(deps, leasePolicy(), expired)).toEqual([runId]);
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('queued');
  });
});
