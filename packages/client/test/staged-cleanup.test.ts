// Leftovers of a crashed writer (src/host-identity.ts `removeStaleStaged`): the next key load or stage in the
// directory removes the `<name>.<pid>.<12 hex>.tmp` files a writer left — its process gone, or this process's
// own pid (a restarted container) outside its stages in flight — once they are older than STALE_STAGED_MS; it
// leaves a live writer's file, a fresh one, any other name, and the key a leftover first link shares its inode
// with. And the pairing proof: `pairingSignature` signs `everdict-runner-pair/1\n<sha256(token)>\n<publicKey>`,
// or with the agent host's tag `everdict-agent-host-pair/1\n…` — neither proof verifies as the other.
import { spawn } from 'node:child_process';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { link, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSigningKey } from '@everdict/runrecord';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AGENT_HOST_PAIRING_PROOF_TAG,
  loadOrCreateSigningKey,
  pairingMessage,
  pairingSignature,
  removeStaleStaged,
  SIGNING_KEY_FILE,
  STALE_STAGED_MS,
  stageFile,
  writeStateFile,
} from '../src/host-identity.js';

const fail = (message: string) => new Error(message);
let dir: string;
beforeEach(async () => {
  dir = join(await mkdtemp(join(tmpdir(), 'staged-cleanup-')), 'state');
  await mkdir(dir, { mode: 0o700 });
});
afterEach(async () => {
  await rm(join(dir, '..'), { recursive: true, force: true });
});

const tag = () => randomBytes(6).toString('hex');
const OLD = (Date.now() - 2 * STALE_STAGED_MS) / 1000;

/** A file named as `stageFile` names them, for `pid`, `old` (mtime two staleness periods ago) or fresh. */
async function leftover(file: string, pid: number, old = true, text = 'x'): Promise<string> {
  const name = `${file}.${pid}.${tag()}.tmp`;
  await writeFile(join(dir, name), text, { mode: 0o600 });
  if (old) await utimes(join(dir, name), OLD, OLD);
  return name;
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}

describe('stale staged files', () => {
  it('the next key load removes a dead writer’s and this pid’s old leftovers, nothing else', async () => {
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    try {
      const dead = await deadPid();
      const stale = [
        await leftover('runner.json', dead),
        await leftover(SIGNING_KEY_FILE, dead),
        await leftover('runner.json', process.pid), // a restarted container's runner: the same pid
      ];
      const kept = [
        await leftover('runner.json', live.pid as number), // a live writer's, however old
        await leftover('runner.json', dead, false), // fresh
        'notes.tmp',
        `runner.json.${dead}.nothex.tmp`,
      ];
      await writeFile(join(dir, 'notes.tmp'), 'mine');
      await writeFile(join(dir, `runner.json.${dead}.nothex.tmp`), 'mine');
      const key = await loadOrCreateSigningKey(dir, fail);
      expect((await readdir(dir)).sort()).toEqual([...kept, SIGNING_KEY_FILE].sort());
      expect(stale.every((n) => !kept.includes(n))).toBe(true);
      expect(key.publicKey).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      live.kill('SIGKILL');
    }
  });

  it('a leftover second name of the key (a crash after its first link) goes; the key stays', async () => {
    const key = await loadOrCreateSigningKey(dir, fail);
    const text = await readFile(join(dir, SIGNING_KEY_FILE), 'utf8');
    const name = `${SIGNING_KEY_FILE}.${await deadPid()}.${tag()}.tmp`;
    await link(join(dir, SIGNING_KEY_FILE), join(dir, name));
    await utimes(join(dir, name), OLD, OLD); // the inode's time: the key's too
    expect((await loadOrCreateSigningKey(dir, fail)).publicKey).toBe(key.publicKey);
    expect(await readdir(dir)).toEqual([SIGNING_KEY_FILE]);
    expect(await readFile(join(dir, SIGNING_KEY_FILE), 'utf8')).toBe(text);
  });

  it('a stage removes stale leftovers, never a stage of this process in flight, however old', async () => {
    const inFlight = await stageFile(join(dir, 'a.json'), '{}\n'); // staged, not yet renamed
    await utimes(inFlight, OLD, OLD);
    const stale = await leftover('a.json', await deadPid());
    await writeStateFile(dir, 'b.json', { b: 1 });
    const names = await readdir(dir);
    expect(names).toContain(inFlight.slice(dir.length + 1));
    expect(names).not.toContain(stale);
    expect(await removeStaleStaged(dir)).toEqual([]);
    expect(await removeStaleStaged(join(dir, 'missing'))).toEqual([]);
  });
});

describe('the pairing proof', () => {
  it('signs everdict-runner-pair/1, the token’s SHA-256 and the public key with the key', () => {
    const key = generateSigningKey(randomBytes(32));
    const token = 'evp_example';
    const digest = createHash('sha256').update(token).digest('hex');
    expect(pairingMessage(token, key.publicKey).toString('utf8')).toBe(
      `everdict-runner-pair/1\n${digest}\n${key.publicKey}`,
    );
    const signature = pairingSignature(key, token);
    expect(signature).toMatch(/^[0-9a-f]{128}$/);
    const spki = Buffer.concat([
      Buffer.from('302a300506032b6570032100', 'hex'),
      Buffer.from(key.publicKey, 'hex'),
    ]);
    const pub = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    const ok = (t: string) =>
      verify(null, pairingMessage(t, key.publicKey), pub, Buffer.from(signature, 'hex'));
    expect(ok(token)).toBe(true);
    expect(ok('evp_other')).toBe(false);
  });

  it('an agent host’s proof signs everdict-agent-host-pair/1 instead; neither verifies as the other', () => {
    const key = generateSigningKey(randomBytes(32));
    const token = 'evp_example';
    const digest = createHash('sha256').update(token).digest('hex');
    const message = pairingMessage(token, key.publicKey, AGENT_HOST_PAIRING_PROOF_TAG);
    expect(message.toString('utf8')).toBe(`everdict-agent-host-pair/1\n${digest}\n${key.publicKey}`);
    const spki = Buffer.concat([
      Buffer.from('302a300506032b6570032100', 'hex'),
      Buffer.from(key.publicKey, 'hex'),
    ]);
    const pub = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    const hostProof = Buffer.from(pairingSignature(key, token, AGENT_HOST_PAIRING_PROOF_TAG), 'hex');
    const runnerProof = Buffer.from(pairingSignature(key, token), 'hex');
    expect(verify(null, message, pub, hostProof)).toBe(true);
    expect(verify(null, message, pub, runnerProof)).toBe(false);
    expect(verify(null, pairingMessage(token, key.publicKey), pub, hostProof)).toBe(false);
  });
});
