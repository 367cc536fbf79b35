// The one host identity of runners and agent hosts (src/host-identity.ts): the key is made once with mode
// 0600 in a 0700 directory and read back as the same key; a file that is not a key is the caller's error;
// state files are 0600 pretty JSON; the native signer signs exactly as runrecord's signAttestation and its
// signature verifies with runrecord; a key whose public half is another's is refused. Files appear whole:
// staged beside their name, then linked (the key: concurrent first uses agree on one key) or renamed over it
// (a state file: a reader of the old file still reads it whole), nothing left beside them.

import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Attestation,
  bytesToHex,
  encodeAttestationBody,
  generateSigningKey,
  signAttestation,
  verifyAddressSignature,
} from '@everdict/runrecord';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  attestationSigner,
  hostStateDir,
  loadOrCreateSigningKey,
  loadSigningKey,
  readStateFile,
  replaceSigningKey,
  SIGNING_KEY_FILE,
  writeStateFile,
} from '../src/host-identity.js';

class Refused extends Error {}
const fail = (message: string) => new Refused(message);
const hex = () => bytesToHex(randomBytes(32));

let dir: string;
beforeEach(async () => {
  dir = join(await mkdtemp(join(tmpdir(), 'host-identity-')), 'state');
});
afterEach(async () => {
  await rm(join(dir, '..'), { recursive: true, force: true });
});

const mode = async (p: string) => (await stat(p)).mode & 0o777;

describe('host identity: key and state files', () => {
  it('makes the key once (0600 in a 0700 directory) and loads the same key again', async () => {
    const key = await loadOrCreateSigningKey(dir, fail);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(join(dir, SIGNING_KEY_FILE))).toBe(0o600);
    expect(await readFile(join(dir, SIGNING_KEY_FILE), 'utf8')).toBe(
      `${Buffer.from(key.secretKey).toString('hex')}\n`,
    );
    const again = await loadOrCreateSigningKey(dir, fail);
    expect(again.publicKey).toBe(key.publicKey);
  });

  it("refuses a key file that is not 64 hex with the caller's error, and leaves it as it was", async () => {
    await loadOrCreateSigningKey(dir, fail);
    await writeFile(join(dir, SIGNING_KEY_FILE), 'not a key\n');
    await expect(loadOrCreateSigningKey(dir, fail)).rejects.toBeInstanceOf(Refused);
    expect(await readFile(join(dir, SIGNING_KEY_FILE), 'utf8')).toBe('not a key\n');
  });

  it('writes state files as 0600 pretty JSON; a missing one reads as null', async () => {
    expect(await readStateFile(dir, 'x.json')).toBeNull();
    await writeStateFile(dir, 'x.json', { a: 1 });
    expect(await mode(join(dir, 'x.json'))).toBe(0o600);
    expect(await readStateFile(dir, 'x.json')).toBe('{\n  "a": 1\n}\n');
    expect(await readdir(dir)).toEqual(['x.json']); // nothing staged left beside it
  });

  it('concurrent first uses of one directory agree on one key, written whole, nothing left beside it', async () => {
    await mkdir(dir, { mode: 0o700 }); // there already: the first uses reach the key file together
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateSigningKey(dir, fail)));
    const stored = await loadSigningKey(dir, fail);
    expect(stored).not.toBeNull();
    for (const key of keys) expect(key.publicKey).toBe(stored?.publicKey);
    expect(await mode(join(dir, SIGNING_KEY_FILE))).toBe(0o600);
    expect(await readdir(dir)).toEqual([SIGNING_KEY_FILE]);
  });

  it('replaces a state file, never rewrites it in place: a reader of the old one still reads it whole', async () => {
    await writeStateFile(dir, 'x.json', { a: 'old' });
    const reader = await open(join(dir, 'x.json'), 'r');
    try {
      await writeStateFile(dir, 'x.json', { a: 'new' });
      expect(await reader.readFile('utf8')).toBe('{\n  "a": "old"\n}\n');
    } finally {
      await reader.close();
    }
    expect(await readStateFile(dir, 'x.json')).toBe('{\n  "a": "new"\n}\n');
    expect(await mode(join(dir, 'x.json'))).toBe(0o600);
    expect(await readdir(dir)).toEqual(['x.json']);
  });

  it('replaces the key with a new one, 0600, that later loads return; nothing left beside it', async () => {
    const old = await loadOrCreateSigningKey(dir, fail);
    const next = await replaceSigningKey(dir);
    expect(next.publicKey).not.toBe(old.publicKey);
    expect(await mode(join(dir, SIGNING_KEY_FILE))).toBe(0o600);
    expect((await loadOrCreateSigningKey(dir, fail)).publicKey).toBe(next.publicKey);
    expect(await readdir(dir)).toEqual([SIGNING_KEY_FILE]);
  });

  it('loads no key where there is none (and makes none)', async () => {
    expect(await loadSigningKey(dir, fail)).toBeNull();
    const key = await loadOrCreateSigningKey(dir, fail);
    expect((await loadSigningKey(dir, fail))?.publicKey).toBe(key.publicKey);
  });

  it('names the state directory from the environment, else under the home directory', () => {
    expect(hostStateDir('X_DIR', '.x', { X_DIR: '/tmp/x' })).toBe('/tmp/x');
    expect(hostStateDir('X_DIR', '.x', {})).toMatch(/\/\.x$/);
  });
});

function attestation(i: number): Attestation {
  return {
    unitId: hex(),
    grantsId: hex(),
    recordHead: hex(),
    startedMs: BigInt(1_700_000_000_000 + i),
    endedMs: BigInt(1_700_000_000_100 + i),
    activeUj: BigInt(i * 1000),
    provenance: 'estimated',
    meter: 'agent-wallclock-model',
    journalRoot: hex(),
    outcome: i % 2 === 0 ? 'succeeded' : 'yielded',
    exitCode: 0,
  };
}

describe('host identity: the attestation signer', () => {
  it("signs the stored key's attestations exactly as signAttestation does; they verify with runrecord", async () => {
    const key = await loadOrCreateSigningKey(dir, fail);
    const sign = attestationSigner(key, fail);
    expect(attestationSigner(key, fail)).toBe(sign); // one per key object
    for (let i = 0; i < 4; i++) {
      const a = attestation(i);
      const native = sign(a);
      const pure = signAttestation(a, key.secretKey);
      expect(native.address).toBe(pure.address);
      expect(encodeAttestationBody(native.body)).toEqual(encodeAttestationBody(pure.body));
      expect(verifyAddressSignature(native.address, native.body.signature!)).toBe(true);
      const other = generateSigningKey(randomBytes(32)).publicKey;
      expect(verifyAddressSignature(native.address, { ...native.body.signature!, key: other })).toBe(false);
    }
  });

  it("refuses a key whose public half is not its own, with the caller's error", () => {
    const a = generateSigningKey(randomBytes(32));
    const b = generateSigningKey(randomBytes(32));
    expect(() => attestationSigner({ secretKey: a.secretKey, publicKey: b.publicKey }, fail)).toThrow(
      Refused,
    );
  });
});
