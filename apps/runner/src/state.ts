// The runner's state directory (EVERDICT_RUNNER_DIR, default ~/.everdict-runner): its Ed25519 secret key
// (`signing.key`, 64 hex, mode 0600 — it never leaves this directory) and its pairing (`runner.json`: the
// control plane's URL, runner id and credential, mode 0600). Key and files are the agent host's too
// (@everdict/client/host-identity); this module keeps the runner's file names, pairing shape and errors.
import { join } from 'node:path';
import {
  hostStateDir,
  loadOrCreateSigningKey,
  readStateFile,
  SIGNING_KEY_FILE,
  writeStateFile,
} from '@everdict/client/host-identity';
import type { SigningKey } from '@everdict/runrecord';
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
