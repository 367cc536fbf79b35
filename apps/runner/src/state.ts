// The runner's state directory (EVERDICT_RUNNER_DIR, default ~/.everdict-runner): its Ed25519 secret key
// (`signing.key`, 64 hex, mode 0600 — it never leaves this directory) and its pairing (`runner.json`: the
// control plane's URL, runner id and credential, mode 0600). Key and files are the agent host's too
// (@everdict/client/host-identity); this module keeps the runner's file names, pairing shape and errors.
// A pairing is a new identity: `pair` makes its key in memory (`newKey`) and `savePairedIdentity` replaces
// both files only once the control plane accepted it, each written beside its file and renamed over it.
// `start` signs only with the key its pairing names (`loadPairedKey`): never one it makes itself.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  hostStateDir,
  loadOrCreateSigningKey,
  loadSigningKey,
  readStateFile,
  SIGNING_KEY_FILE,
  stageFile,
  syncDirectory,
  writeStateFile,
} from '@everdict/client/host-identity';
import { generateSigningKey, type SigningKey } from '@everdict/runrecord';
import { z } from 'zod';
import { RunnerError } from './errors.js';

export const KEY_FILE = SIGNING_KEY_FILE;
export const PAIRING_FILE = 'runner.json';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return hostStateDir('EVERDICT_RUNNER_DIR', '.everdict-runner', env);
}

export const Pairing = z.strictObject({
  url: z.string().url(),
  runnerId: z.string().min(1),
  credential: z.string().min(1),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/),
  name: z.string().min(1),
});
export type Pairing = z.infer<typeof Pairing>;

/** The runner's key, made (from 32 random bytes) and stored with mode 0600 on first use. */
export function loadOrCreateKey(dir: string): Promise<SigningKey> {
  return loadOrCreateSigningKey(dir, (message) => new RunnerError('bad_state', message));
}

/**
 * The key `pairing` was paired with, from `dir`'s key file: `bad_state` when there is none or it is another
 * key — the control plane refuses every completion signed with a key it did not pair. Never makes one.
 */
export async function loadPairedKey(dir: string, pairing: Pairing): Promise<SigningKey> {
  const path = join(dir, KEY_FILE);
  const again = `pair again (\`everdict-runner pair <url> <token>\`: a new key and pairing)`;
  const key = await loadSigningKey(dir, (message) => new RunnerError('bad_state', `${message}: ${again}`));
  if (!key)
    throw new RunnerError(
      'bad_state',
      `no signing key at ${path} for runner ${pairing.runnerId} (${join(dir, PAIRING_FILE)}); the control plane ` +
        `accepts only the key it paired, and a new one would have every completion refused: ${again}`,
    );
  if (key.publicKey !== pairing.publicKey)
    throw new RunnerError(
      'bad_state',
      `${path} (public key ${key.publicKey}) is not the key ${join(dir, PAIRING_FILE)} was paired with ` +
        `(${pairing.publicKey}); the control plane would refuse every completion it signs: ${again}`,
    );
  return key;
}

/** A new key (from 32 random bytes), in memory only: stored by `savePairedIdentity` once it is paired. */
export function newKey(): SigningKey {
  return generateSigningKey(randomBytes(32));
}

/**
 * Replace the runner's identity in `dir` with a new pairing and its key (the key the control plane paired):
 * both files are staged beside theirs first, then renamed over them — the key, then `runner.json` — so a
 * failure before the renames leaves the directory as it was, and a reader never sees a half-written file.
 */
export async function savePairedIdentity(dir: string, key: SigningKey, pairing: Pairing): Promise<void> {
  const parsed = Pairing.parse(pairing);
  if (parsed.publicKey !== key.publicKey)
    throw new RunnerError('bad_state', 'the pairing names another public key than its signing key');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const keyPath = join(dir, KEY_FILE);
  const pairingPath = join(dir, PAIRING_FILE);
  const staged: string[] = [];
  try {
    staged.push(await stageFile(keyPath, `${Buffer.from(key.secretKey).toString('hex')}\n`));
    staged.push(await stageFile(pairingPath, `${JSON.stringify(parsed, null, 2)}\n`));
    await rename(staged[0] as string, keyPath);
    await rename(staged[1] as string, pairingPath);
  } catch (err) {
    await Promise.all(staged.map((path) => rm(path, { force: true })));
    throw err;
  }
  await syncDirectory(dir); // the renames themselves, durable
}

export async function savePairing(dir: string, pairing: Pairing): Promise<void> {
  await writeStateFile(dir, PAIRING_FILE, Pairing.parse(pairing));
}

export async function loadPairing(dir: string): Promise<Pairing> {
  // Any read failure (none there, unreadable) is `not_paired`, as it always was.
  const text = await readStateFile(dir, PAIRING_FILE).catch(() => null);
  if (text === null)
    throw new RunnerError(
      'not_paired',
      `no pairing in ${dir}: run \`everdict-runner pair <url> <token>\` first`,
    );
  const parsed = Pairing.safeParse(JSON.parse(text));
  if (!parsed.success) throw new RunnerError('bad_state', `${join(dir, PAIRING_FILE)} is not a pairing`);
  return parsed.data;
}
