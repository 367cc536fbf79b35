// The runner's state directory on the shared host identity (@everdict/client/host-identity): a directory
// written the way the runner always wrote it (a 64-hex key + newline, `runner.json` pretty JSON) loads
// unchanged — the same key, the same pairing; a pairing saved now is byte-identical and 0600; no pairing is
// `not_paired`, a bad key file `bad_state`. A new pairing replaces key and pairing together (renamed over them,
// 0600, nothing left beside them); one that names another key than its own is refused, nothing written.
// `start`'s key is the one its pairing names: none, or another, is `bad_state` — and no key is made.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSigningKey } from '@everdict/runrecord';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  loadOrCreateKey,
  loadPairedKey,
  loadPairing,
  newKey,
  type Pairing,
  savePairedIdentity,
  savePairing,
} from '../src/state.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'runner-state-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('runner state directory', () => {
  it('loads a state directory written before the shared module, and saves the same bytes', async () => {
    const key = generateSigningKey(randomBytes(32));
    const pairing: Pairing = {
      url: 'http://127.0.0.1:8787',
      runnerId: 'rnr_1',
      credential: 'evr_secret',
      publicKey: key.publicKey,
      name: 'r1',
    };
    const text = `${JSON.stringify(pairing, null, 2)}\n`;
    await writeFile(join(dir, 'signing.key'), `${Buffer.from(key.secretKey).toString('hex')}\n`, {
      mode: 0o600,
    });
    await writeFile(join(dir, 'runner.json'), text, { mode: 0o600 });
    expect((await loadOrCreateKey(dir)).publicKey).toBe(key.publicKey);
    expect(await loadPairing(dir)).toEqual(pairing);
    await savePairing(dir, pairing);
    expect(await readFile(join(dir, 'runner.json'), 'utf8')).toBe(text);
    expect((await stat(join(dir, 'runner.json'))).mode & 0o777).toBe(0o600);
  });

  it('no pairing is not_paired; a key file that is not a key is bad_state', async () => {
    await expect(loadPairing(dir)).rejects.toMatchObject({ code: 'not_paired' });
    await writeFile(join(dir, 'signing.key'), 'xyz\n');
    await expect(loadOrCreateKey(dir)).rejects.toMatchObject({ code: 'bad_state' });
  });

  it('a new pairing replaces the key and the pairing; one naming another key is refused, nothing written', async () => {
    const old = await loadOrCreateKey(dir);
    const pairingOf = (publicKey: string, runnerId: string): Pairing => ({
      url: 'http://127.0.0.1:8787',
      runnerId,
      credential: `evr_${runnerId}`,
      publicKey,
      name: 'r1',
    });
    await savePairing(dir, pairingOf(old.publicKey, 'rnr_old'));
    const before = [await readFile(join(dir, 'signing.key')), await readFile(join(dir, 'runner.json'))];

    const key = newKey();
    expect(key.publicKey).not.toBe(old.publicKey);
    await expect(savePairedIdentity(dir, key, pairingOf(old.publicKey, 'rnr_new'))).rejects.toMatchObject({
      code: 'bad_state',
    });
    expect(await readFile(join(dir, 'signing.key'))).toEqual(before[0]);
    expect(await readFile(join(dir, 'runner.json'))).toEqual(before[1]);

    await savePairedIdentity(dir, key, pairingOf(key.publicKey, 'rnr_new'));
    expect((await loadOrCreateKey(dir)).publicKey).toBe(key.publicKey);
    expect(await loadPairing(dir)).toEqual(pairingOf(key.publicKey, 'rnr_new'));
    for (const file of ['signing.key', 'runner.json'])
      expect((await stat(join(dir, file))).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual(['runner.json', 'signing.key']);
  });

  it("start's key is its pairing's: none or another is bad_state, naming the file and re-pairing", async () => {
    const key = newKey();
    const pairing: Pairing = {
      url: 'http://127.0.0.1:8787',
      runnerId: 'rnr_1',
      credential: 'evr_1',
      publicKey: key.publicKey,
      name: 'r1',
    };
    await savePairing(dir, pairing);
    const none = loadPairedKey(dir, pairing);
    await expect(none).rejects.toMatchObject({ code: 'bad_state' });
    await expect(none).rejects.toThrow(/no signing key at .*signing\.key.*everdict-runner pair/);
    expect(await readdir(dir)).toEqual(['runner.json']); // none made

    await savePairedIdentity(dir, key, pairing);
    expect((await loadPairedKey(dir, pairing)).publicKey).toBe(key.publicKey);
    const other = newKey();
    await writeFile(join(dir, 'signing.key'), `${Buffer.from(other.secretKey).toString('hex')}\n`);
    const another = loadPairedKey(dir, pairing);
    await expect(another).rejects.toMatchObject({ code: 'bad_state' });
    await expect(another).rejects.toThrow(
      /signing\.key .* is not the key .*runner\.json.*everdict-runner pair/,
    );
  });
});
