// One runner per public key, ever, on the real core (PGlite): a pairing with a key another runner registered —
// active, of another scope, or revoked — is 409 `conflict` (`details.reason: public_key_in_use`), pairs nothing,
// and leaves the pairing token unspent. The embedded runner, whose pairing is gone while its key is registered,
// pairs again with a new key.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateSigningKey, type SigningKey } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { mintPairingToken, pairingProof } from '../http/testing/runners.js';
import { pairEmbeddedRunner } from './embedded.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 1 };

const mint = (shared = false) => mintPairingToken(t.app, { shared });

const pairWith = (token: string, key: SigningKey, name = 'r') =>
  call(t.app, 'POST', '/runners/pair', {
    key: null,
    body: { token, ...pairingProof(token, key), name, capabilities: CAPS },
  });
const newKey = () => generateSigningKey(randomBytes(32));

const runnersWithKey = async (publicKey: string) =>
  (
    await t.core.internals.deps.db
      .selectFrom('runners')
      .select('id')
      .where('public_key', '=', publicKey)
      .execute()
  ).map((r) => r.id);

/** The refusal, and that the token it presented still pairs (with a new key). */
async function expectRefusedTokenUnspent(token: string, key: SigningKey, holder: string): Promise<void> {
  const refused = await pairWith(token, key, 'impostor');
  expect(refused.status, JSON.stringify(refused.body)).toBe(409);
  expect(refused.body).toMatchObject({ code: 'conflict', details: { reason: 'public_key_in_use' } });
  expect(await runnersWithKey(key.publicKey)).toEqual([holder]);
  const fresh = await pairWith(token, newKey());
  expect(fresh.status, JSON.stringify(fresh.body)).toBe(201);
}

describe('a public key pairs one runner', () => {
  it('a key an active runner holds: 409, the token unspent; across scopes too', async () => {
    const key = newKey();
    const first = await pairWith(await mint(), key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const holder = String(first.body.runnerId);
    await expectRefusedTokenUnspent(await mint(), key, holder);
    // A shared runner cannot take a tenant runner's key (it would sign as that runner).
    await expectRefusedTokenUnspent(await mint(true), key, holder);
    // Another tenant's admin cannot either.
    const other = await call(t.app, 'POST', '/runners/pairing-tokens', {
      key: await t.tenant('pair-key-other'),
      body: {},
    });
    await expectRefusedTokenUnspent(String(other.body.token), key, holder);
  });

  it('a revoked runner’s key does not come back', async () => {
    const key = newKey();
    const first = await pairWith(await mint(), key);
    const holder = String(first.body.runnerId);
    const revoked = await call(t.app, 'POST', `/runners/${holder}/revoke`);
    expect(revoked.body.state).toBe('revoked');
    await expectRefusedTokenUnspent(await mint(), key, holder);
  });

  it('an unusable token is still 401 with a registered key (the token is checked first)', async () => {
    const key = newKey();
    expect((await pairWith(await mint(), key)).status).toBe(201);
    const refused = await pairWith('evp_not-a-token', key);
    expect([refused.status, refused.body.code]).toEqual([401, 'invalid_pairing_token']);
  });
});

describe('the embedded runner’s key', () => {
  it('pairs again with a new key once the operator revoked its runner', async () => {
    const stateDir = mkdtempSync(path.join(os.tmpdir(), 'cp-embedded-key-'));
    try {
      const runners = t.core.services.runners;
      if (!runners) throw new Error('no runner service');
      const embed = () =>
        pairEmbeddedRunner({
          stateDir,
          cli: process.execPath, // never launched here (no `start`)
          slots: 1,
          mintToken: () => runners.mintSharedPairingToken({ name: 'embedded' }),
          pair: (input) => runners.pair(input),
          ledger: t.core.internals.deps.db,
          log: () => undefined,
        });
      const keyFile = path.join(stateDir, 'state', 'signing.key');
      const first = await embed();
      const firstKey = readFileSync(keyFile, 'utf8');
      // Kept while its runner is active.
      expect((await embed()).runnerId).toBe(first.runnerId);
      const revoked = await call(t.app, 'POST', `/internal/runners/${first.runnerId}/revoke`, {
        key: INTERNAL_TOKEN,
        body: {},
      });
      expect(revoked.body.state).toBe('revoked');
      const second = await embed();
      expect(second.runnerId).not.toBe(first.runnerId);
      expect(readFileSync(keyFile, 'utf8')).not.toBe(firstKey);
      const pairing = JSON.parse(readFileSync(path.join(stateDir, 'state', 'runner.json'), 'utf8')) as {
        publicKey: string;
      };
      expect(await runnersWithKey(pairing.publicKey)).toEqual([second.runnerId]);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
