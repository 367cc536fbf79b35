// `--pair` (hostIdentity's autoPair) when the host's key is registered already, on the real control plane: a
// key names one identity, ever — the control plane refuses to pair a key it lists, a revoked host's too — so
// the host pairs again with a new key, as the control plane's embedded runner does. Before, it re-sent its old
// key and failed 409 `state_conflict`: a revoked host could not come back with `--pair`, and the main job
// (`everdict start`) stopped when its state directory had served another ledger (its saved pairing unknown
// there, its key paired there before).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, dataOf } from '@everdict/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PAIRING_FILE } from '../src/host/host-key.js';
import { hostIdentity, pairHost } from '../src/host/pairing.js';
import { revokeHost, type Seat, seat } from './support.js';

let s: Seat;
let root: string;
beforeAll(async () => {
  s = await seat();
  root = await mkdtemp(join(tmpdir(), 'agent-pair-again-'));
}, 300_000);
afterAll(async () => {
  await s?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

const autoPair = (dir: string) =>
  hostIdentity({ url: s.cp.url, dir, name: 'again', autoPair: { serviceToken: s.cp.internalToken } });

/** The control plane's listed keys (GET /keys, no credential). */
const listedKeys = async () => dataOf(await createClient({ baseUrl: s.cp.url }).GET('/keys')).keys;

it('a revoked host pairs again with a new key; the old one stays listed, revoked', async () => {
  const dir = join(root, 'revoked');
  const { token } = dataOf(await s.admin.POST('/runners/pairing-tokens', { body: {} }));
  const first = await pairHost({ url: s.cp.url, token, name: 'first', dir });
  await revokeHost(s, first.hostId);

  const again = await autoPair(dir);
  expect(again?.hostId).toBeDefined();
  expect(again?.hostId).not.toBe(first.hostId);
  expect(again?.publicKey).not.toBe(first.publicKey);
  const keys = await listedKeys();
  expect(keys.find((k) => k.key === first.publicKey)?.revokedAt).toEqual(expect.any(String));
  expect(keys.find((k) => k.key === again?.publicKey)).toMatchObject({
    kind: 'agent-host',
    id: again?.hostId,
  });
  // The new identity is the one kept: the next start keeps it, pairing nothing.
  expect((await autoPair(dir))?.hostId).toBe(again?.hostId);
});

it('a state directory whose pairing this control plane does not know, with a key it does, pairs with a new key', async () => {
  const dir = join(root, 'other-ledger');
  const live = await autoPair(dir);
  if (!live) throw new Error('did not pair');
  // The same directory, paired meanwhile with another ledger: its pairing names a host unknown here.
  const file = join(dir, PAIRING_FILE);
  const saved = JSON.parse(await readFile(file, 'utf8'));
  await writeFile(file, JSON.stringify({ ...saved, hostId: 'agh_from_another_ledger' }));

  const again = await autoPair(dir);
  expect(again?.hostId).not.toBe(live.hostId);
  expect(again?.hostId).not.toBe('agh_from_another_ledger');
  expect(again?.publicKey).not.toBe(live.publicKey);
  // The host this control plane knew keeps its key listed (its records still verify with it).
  expect((await listedKeys()).find((k) => k.key === live.publicKey)).toMatchObject({ id: live.hostId });
});
