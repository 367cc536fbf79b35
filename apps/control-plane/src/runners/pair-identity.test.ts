// One key, one identity; proof of possession; who drained and revoked — on the real core (PGlite):
// - a public key a runner holds pairs no agent host, and an agent host's key pairs no runner: 409 `conflict`
//   (`details.reason: public_key_in_use`), nothing registered, the token unspent;
// - `POST /runners/pair` needs the key's signature of `everdict-runner-pair/1\n<sha256(token)>\n<publicKey>`,
//   `POST /agents/hosts/pair` of `everdict-agent-host-pair/1\n…`: another key's, one made for another token, one
//   under the other route's tag, or 128 hex that is no signature is 401 `invalid_pairing_token`
//   (`reason: bad_signature`), nothing registered, the token unspent; none at all (or not 128 lowercase hex) is
//   400;
// - a drain and a revoke record their actor (the admin key's id, or `operator` at the service token's door) and
//   time, read back by GET /runners and GET /internal/runners; a refused drain records nothing; an agent host's
//   revoke records its actor, read back by GET /agents/hosts.
import { createHash, randomBytes } from 'node:crypto';
import { generateSigningKey, type SigningKey } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { mintPairingToken, pairingProof, pairingSignature } from '../http/testing/runners.js';
import { AGENT_HOST_PAIRING_PROOF_TAG } from './registry.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 1 };
const newKey = () => generateSigningKey(randomBytes(32));

const mint = (shared = false) => mintPairingToken(t.app, { shared });

const pairRunner = (token: string, key: SigningKey, signature = pairingSignature(token, key)) =>
  call(t.app, 'POST', '/runners/pair', {
    key: null,
    body: { token, publicKey: key.publicKey, signature, name: 'r', capabilities: CAPS },
  });
/** An agent host's proof of `key` for `token` (the agent host's domain tag). */
const hostSignature = (token: string, key: SigningKey) =>
  pairingSignature(token, key, AGENT_HOST_PAIRING_PROOF_TAG);
/** `POST /agents/hosts/pair` with `key` and `signature` (default: the key's proof for `token`; `NONE`: none). */
const NONE = Symbol('no signature');
const pairHost = (token: string, key: SigningKey, signature: unknown = hostSignature(token, key)) =>
  call(t.app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token, publicKey: key.publicKey, ...(signature === NONE ? {} : { signature }), name: 'h' },
  });

const holdersOf = async (publicKey: string) => {
  const db = t.core.internals.deps.db;
  const runners = await db.selectFrom('runners').select('id').where('public_key', '=', publicKey).execute();
  const hosts = await db.selectFrom('agent_hosts').select('id').where('public_key', '=', publicKey).execute();
  return [...runners, ...hosts].map((r) => r.id);
};

const agentHostCount = async (): Promise<number> => {
  const db = t.core.internals.deps.db;
  const rows = await db.selectFrom('agent_hosts').select('id').execute();
  return rows.length;
};

/** A pairing refused for its signature: 401 invalid_pairing_token, reason bad_signature. */
function expectBadSignature(refused: { status: number; body: Record<string, unknown> }): void {
  expect(refused.status, JSON.stringify(refused.body)).toBe(401);
  expect(refused.body).toMatchObject({ code: 'invalid_pairing_token', details: { reason: 'bad_signature' } });
}

/** The token was not spent: it still pairs a runner with a new key. */
async function expectUnspent(token: string): Promise<void> {
  const fresh = await pairRunner(token, newKey());
  expect(fresh.status, JSON.stringify(fresh.body)).toBe(201);
}

describe('a key names one identity, runner or agent host', () => {
  it('a runner’s key pairs no agent host (409, nothing registered, the token unspent)', async () => {
    const key = newKey();
    const runner = await pairRunner(await mint(), key);
    expect(runner.status, JSON.stringify(runner.body)).toBe(201);
    for (const token of [await mint(), await mint(true)]) {
      const refused = await pairHost(token, key);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body).toMatchObject({ code: 'conflict', details: { reason: 'public_key_in_use' } });
      expect(await holdersOf(key.publicKey)).toEqual([runner.body.runnerId]);
      await expectUnspent(token);
    }
  });

  it('an agent host’s key pairs no runner — a revoked host’s neither (409, the token unspent)', async () => {
    const key = newKey();
    const host = await pairHost(await mint(), key);
    expect(host.status, JSON.stringify(host.body)).toBe(201);
    const token = await mint();
    const refused = await pairRunner(token, key);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body).toMatchObject({ code: 'conflict', details: { reason: 'public_key_in_use' } });
    expect(await holdersOf(key.publicKey)).toEqual([host.body.hostId]);
    await expectUnspent(token);
    const revoked = await call(t.app, 'POST', `/agents/hosts/${String(host.body.hostId)}/revoke`, {
      body: {},
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect((await pairRunner(await mint(), key)).status).toBe(409);
  });
});

describe('pairing proves possession of the key', () => {
  it('another key’s signature, or one made for another token, is 401 bad_signature; the token unspent', async () => {
    const token = await mint();
    const key = newKey();
    for (const signature of [
      pairingSignature(token, newKey()),
      pairingSignature(await mint(), key),
      hostSignature(token, key), // an agent host's proof of this very key and token: another domain
    ]) {
      const refused = await pairRunner(token, key, signature);
      expectBadSignature(refused);
    }
    expect(await holdersOf(key.publicKey)).toEqual([]);
    const paired = await pairRunner(token, key);
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  });

  it('a pairing without a signature is 400, the token unspent', async () => {
    const token = await mint();
    const { publicKey } = pairingProof(token);
    const refused = await call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: { token, publicKey, name: 'r', capabilities: CAPS },
    });
    expect([refused.status, refused.body.code]).toEqual([400, 'validation_failed']);
    await expectUnspent(token);
  });

  it('an agent host: another key’s, another token’s, a runner’s or a garbage signature is 401 bad_signature; nothing written, the token unspent', async () => {
    const token = await mint();
    const key = newKey();
    const hostsBefore = await agentHostCount();
    for (const signature of [
      hostSignature(token, newKey()),
      hostSignature(await mint(), key),
      pairingSignature(token, key), // a runner's proof of this very key and token: another domain
      'ab'.repeat(64), // 128 hex that no key signed
    ]) {
      const refused = await pairHost(token, key, signature);
      expectBadSignature(refused);
    }
    expect(await holdersOf(key.publicKey)).toEqual([]);
    expect(await agentHostCount()).toBe(hostsBefore);
    // The refused token still pairs this very key, with its proof.
    const paired = await pairHost(token, key);
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
    expect(await holdersOf(key.publicKey)).toEqual([paired.body.hostId]);
  });

  it('an agent host pairing without a signature, or not 128 lowercase hex, is 400; the token unspent', async () => {
    const token = await mint();
    const key = newKey();
    const good = hostSignature(token, key);
    for (const signature of [
      NONE,
      null,
      '',
      good.slice(2),
      `${good}00`,
      good.toUpperCase(),
      'zz'.repeat(64),
      7,
    ]) {
      const refused = await pairHost(token, key, signature);
      expect([refused.status, refused.body.code], JSON.stringify(refused.body)).toEqual([
        400,
        'validation_failed',
      ]);
    }
    expect(await holdersOf(key.publicKey)).toEqual([]);
    const paired = await pairHost(token, key, good);
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  });
});

type Listed = {
  id: string;
  state: string;
  drainedAt: string | null;
  drainedBy: string | null;
  revokedBy: string | null;
  revokedAt: string | null;
};
const listed = async (id: string, operator = false): Promise<Listed> => {
  const res = operator
    ? await call(t.app, 'GET', '/internal/runners', { key: INTERNAL_TOKEN })
    : await call(t.app, 'GET', '/runners');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const found = (res.body.items as Listed[]).find((r) => r.id === id);
  if (!found) throw new Error(`runner ${id} not listed`);
  return found;
};

const adminKeyId = async (): Promise<string> => {
  const hash = createHash('sha256').update(ADMIN_KEY, 'utf8').digest('hex');
  const row = await t.core.internals.deps.db
    .selectFrom('api_keys')
    .select('id')
    .where('key_hash', '=', hash)
    .executeTakeFirstOrThrow();
  return row.id;
};

describe('drain and revoke record who did them', () => {
  it('a tenant admin’s drain and revoke: its key id and the time; a refused drain records nothing', async () => {
    const paired = await pairRunner(await mint(), newKey());
    const id = String(paired.body.runnerId);
    expect(await listed(id)).toMatchObject({ drainedBy: null, drainedAt: null, revokedBy: null });
    const actor = await adminKeyId();
    const drained = await call(t.app, 'POST', `/runners/${id}/drain`);
    expect(drained.status, JSON.stringify(drained.body)).toBe(200);
    const after = await listed(id);
    expect(after).toMatchObject({ state: 'draining', drainedBy: actor, revokedBy: null });
    expect(Date.parse(String(after.drainedAt))).not.toBeNaN();
    // A drain of a draining runner changes nothing and records nothing new.
    await call(t.app, 'POST', `/runners/${id}/drain`);
    expect((await listed(id)).drainedAt).toBe(after.drainedAt);
    const revoked = await call(t.app, 'POST', `/runners/${id}/revoke`);
    expect(revoked.body).toMatchObject({ state: 'revoked', revokedBy: actor, drainedBy: actor });
    // A drain of a revoked runner is refused (409) and records nothing.
    const refused = await call(t.app, 'POST', `/runners/${id}/drain`);
    expect(refused.status).toBe(409);
    expect(await listed(id)).toMatchObject({
      drainedAt: after.drainedAt,
      drainedBy: actor,
      revokedBy: actor,
    });
  });

  it('a drain refused at once (a revoked runner never drained) leaves no drain recorded', async () => {
    const paired = await pairRunner(await mint(), newKey());
    const id = String(paired.body.runnerId);
    await call(t.app, 'POST', `/runners/${id}/revoke`);
    expect((await call(t.app, 'POST', `/runners/${id}/drain`)).status).toBe(409);
    expect(await listed(id)).toMatchObject({ state: 'revoked', drainedBy: null, drainedAt: null });
  });

  it('the operator’s door records `operator`', async () => {
    const paired = await pairRunner(await mint(true), newKey());
    const id = String(paired.body.runnerId);
    const door = (verb: string) =>
      call(t.app, 'POST', `/internal/runners/${id}/${verb}`, { key: INTERNAL_TOKEN, body: {} });
    expect((await door('drain')).status).toBe(200);
    expect(await listed(id, true)).toMatchObject({ drainedBy: 'operator', revokedBy: null });
    expect((await door('revoke')).body).toMatchObject({ revokedBy: 'operator', drainedBy: 'operator' });
    // The tenant's list shows the shared runner with its record too.
    expect(await listed(id)).toMatchObject({ revokedBy: 'operator' });
  });

  it('an agent host’s revoke records the admin key’s id', async () => {
    const host = await pairHost(await mint(), newKey());
    const id = String(host.body.hostId);
    await call(t.app, 'POST', `/agents/hosts/${id}/revoke`, { body: {} });
    const hosts = await call(t.app, 'GET', '/agents/hosts');
    const row = (hosts.body.items as { id: string; revokedBy: string | null }[]).find((h) => h.id === id);
    expect(row?.revokedBy).toBe(await adminKeyId());
  });
});
