// The agent host's state directory on the shared host identity (@everdict/client/host-identity): a
// directory written the way the agent always wrote it loads unchanged (same key, same pairing), a pairing
// saved now is byte-identical and 0600, none is null, and the signer is the key's own.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex, generateSigningKey, verifyAddressSignature } from '@everdict/runrecord';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type HostPairing, intervalSigner, loadOrCreateKey, loadPairing, savePairing } from './host-key.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agent-host-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('agent host state directory', () => {
  it('loads a state directory written before the shared module, saves the same bytes, signs with its key', async () => {
    expect(await loadPairing(dir)).toBeNull();
    const key = generateSigningKey(randomBytes(32));
    const pairing: HostPairing = {
      url: 'http://127.0.0.1:8787',
      hostId: 'agh_1',
      publicKey: key.publicKey,
      name: 'host-a',
    };
    const text = `${JSON.stringify(pairing, null, 2)}\n`;
    await writeFile(join(dir, 'signing.key'), `${Buffer.from(key.secretKey).toString('hex')}\n`, {
      mode: 0o600,
    });
    await writeFile(join(dir, 'agent-host.json'), text, { mode: 0o600 });
    const loaded = await loadOrCreateKey(dir);
    expect(loaded.publicKey).toBe(key.publicKey);
    expect(await loadPairing(dir)).toEqual(pairing);
    await savePairing(dir, pairing);
    expect(await readFile(join(dir, 'agent-host.json'), 'utf8')).toBe(text);
    expect((await stat(join(dir, 'agent-host.json'))).mode & 0o777).toBe(0o600);
    const hex = () => bytesToHex(randomBytes(32));
    const { body, address } = intervalSigner(loaded)({
      unitId: hex(),
      grantsId: hex(),
      recordHead: hex(),
      startedMs: 1n,
      endedMs: 2n,
      activeUj: 1n,
      provenance: 'estimated',
      meter: 'agent-wallclock-model',
      journalRoot: hex(),
      outcome: 'yielded',
      exitCode: 0,
    });
    expect(body.signature?.key).toBe(key.publicKey);
    expect(verifyAddressSignature(address, body.signature!)).toBe(true);
  });

  it('a key file that is not a key is bad_request', async () => {
    await writeFile(join(dir, 'signing.key'), 'xyz\n');
    await expect(loadOrCreateKey(dir)).rejects.toMatchObject({ code: 'bad_request' });
  });
});
