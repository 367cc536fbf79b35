// The runner's state directory (EVERDICT_RUNNER_DIR, default ~/.everdict-runner): its Ed25519 secret key
// (`signing.key`, 64 hex, mode 0600 — it never leaves this directory) and its pairing (`runner.json`: the
// control plane's URL, runner id and credential, mode 0600).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { generateSigningKey, hexToBytes, type SigningKey } from '@everdict/runrecord';
import { z } from 'zod';
import { RunnerError } from './errors.js';

export const KEY_FILE = 'signing.key';
export const PAIRING_FILE = 'runner.json';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.EVERDICT_RUNNER_DIR ?? join(homedir(), '.everdict-runner');
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
export async function loadOrCreateKey(dir: string): Promise<SigningKey> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, KEY_FILE);
  try {
    const hex = (await readFile(path, 'utf8')).trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new RunnerError('bad_state', `${path} is not a 64-hex secret key`);
    return generateSigningKey(hexToBytes(hex));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = generateSigningKey(randomBytes(32));
  await writeFile(path, `${Buffer.from(key.secretKey).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
  return key;
}

export async function savePairing(dir: string, pairing: Pairing): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, PAIRING_FILE);
  await writeFile(path, `${JSON.stringify(Pairing.parse(pairing), null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
}

export async function loadPairing(dir: string): Promise<Pairing> {
  let text: string;
  try {
    text = await readFile(join(dir, PAIRING_FILE), 'utf8');
  } catch {
    throw new RunnerError(
      'not_paired',
      `no pairing in ${dir}: run \`everdict-runner pair <url> <token>\` first`,
    );
  }
  const parsed = Pairing.safeParse(JSON.parse(text));
  if (!parsed.success) throw new RunnerError('bad_state', `${join(dir, PAIRING_FILE)} is not a pairing`);
  return parsed.data;
}
