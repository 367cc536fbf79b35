// Two pairings of one public key at once, on two connections (runners/registry.ts `refuseRegisteredKey`: the
// key's advisory lock, held to the commit, serializes them). A third connection holds `runners` in SHARE mode,
// so neither pairing can insert its row until both have reached the point where they wait (watched in
// pg_stat_activity, never a sleep): without the key's lock both would have checked the key before either
// inserted, and both would pair. With it, one pairs and the other is 409 `public_key_in_use`, its token unspent.
// Live PostgreSQL only (PGlite has one connection).
import { randomBytes } from 'node:crypto';
import { generateSigningKey, type SigningKey } from '@everdict/runrecord';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../src/http/testing/harness.js';
import { mintPairingToken, pairingProof } from '../src/http/testing/runners.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/pair-key-race.pg.test.ts');

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 1 };

describe.runIf(LIVE_PG)('two pairings of one public key at once', () => {
  let t: RunnerApp;
  let race: LockRace;
  let locker: pg.Client;
  let watch: pg.Client;

  beforeAll(async () => {
    race = await lockRace();
    ({ t, locker, watch } = race);
  }, 120_000);
  afterAll(() => race?.close());

  const mint = () => mintPairingToken(t.app);
  const pairWith = (token: string, key: SigningKey) =>
    call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: { token, ...pairingProof(token, key), name: 'racing', capabilities: CAPS },
    });

  it('pairs one runner; the other is 409 and its token still pairs', async () => {
    const signer = generateSigningKey(randomBytes(32));
    const key = signer.publicKey;
    const tokens = [await mint(), await mint()];
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE runners IN SHARE MODE');
    let settled = 0;
    const both = tokens.map((token) =>
      pairWith(token, signer).finally(() => {
        settled += 1;
      }),
    );
    // Both wait: at the insert (past the key check), or one of them at the key's lock.
    await race.waiting(2, () => settled > 0);
    await locker.query('COMMIT');
    const answers = await Promise.all(both);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const refused = answers.find((a) => a.status === 409);
    expect(refused?.body).toMatchObject({ code: 'conflict', details: { reason: 'public_key_in_use' } });
    const holders = await watch.query('SELECT id FROM runners WHERE public_key = $1', [key]);
    expect(holders.rowCount).toBe(1);
    const unspent = tokens[answers.indexOf(refused!)]!;
    const fresh = await pairWith(unspent, generateSigningKey(randomBytes(32)));
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(201);
  });
});
