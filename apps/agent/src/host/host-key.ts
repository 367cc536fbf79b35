// The agent host's identity (issue 16 item 4): its state directory (EVERDICT_AGENT_DIR, default
// ~/.everdict-agent) holds its Ed25519 secret key (`signing.key`, 64 hex, mode 0600 — it never leaves this
// directory) and its pairing (`agent-host.json`: the control plane's URL, the host id, the public key,
// mode 0600). Key, files and signer are the runner's too: @everdict/client/host-identity; this module keeps
// the agent host's file names, its pairing's shape and its error (AgentError `bad_request`).

import { join } from 'node:path';
import {
  type AttestationSigner,
  attestationSigner,
  hostStateDir,
  loadOrCreateSigningKey,
  readStateFile,
  SIGNING_KEY_FILE,
  writeStateFile,
} from '@everdict/client/host-identity';
import type { SigningKey } from '@everdict/runrecord';
import { z } from 'zod';
import { AgentError } from '../errors.js';

export const KEY_FILE = SIGNING_KEY_FILE;
export const PAIRING_FILE = 'agent-host.json';

const badState = (message: string) => new AgentError('bad_request', message);

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return hostStateDir('EVERDICT_AGENT_DIR', '.everdict-agent', env);
}

export const HostPairing = z.strictObject({
  url: z.url(),
  hostId: z.string().min(1),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/),
  name: z.string().min(1),
});
export type HostPairing = z.infer<typeof HostPairing>;

/** The host's key, made (from 32 random bytes) and stored with mode 0600 on first use. */
export function loadOrCreateKey(dir: string): Promise<SigningKey> {
  return loadOrCreateSigningKey(dir, badState);
}

export async function savePairing(dir: string, pairing: HostPairing): Promise<void> {
  await writeStateFile(dir, PAIRING_FILE, HostPairing.parse(pairing));
}

/** The saved pairing, or null when this host never paired. */
export async function loadPairing(dir: string): Promise<HostPairing | null> {
  const text = await readStateFile(dir, PAIRING_FILE);
  if (text === null) return null;
  const parsed = HostPairing.safeParse(JSON.parse(text));
  if (!parsed.success) throw new AgentError('bad_request', `${join(dir, PAIRING_FILE)} is not a pairing`);
  return parsed.data;
}

/** Signs an interval's attestation with the host's key: the wire body's fields and its address. */
export type IntervalSigner = AttestationSigner;

/** The signer of `key`; refuses a key whose public half is not its own. */
export function intervalSigner(key: SigningKey): IntervalSigner {
  return attestationSigner(key, badState);
}
