// The agent host's identity (issue 16 item 4): its state directory (EVERDICT_AGENT_DIR, default
// ~/.everdict-agent) holds its Ed25519 secret key (`signing.key`, 64 hex, mode 0600 — it never leaves this
// directory) and its pairing (`agent-host.json`: the control plane's URL, the host id, the public key,
// mode 0600). The signer makes the same `sandbox.attestation/1` body and signature as runrecord's
// `signAttestation` (Ed25519 is deterministic: the bytes are identical), with node:crypto's native Ed25519
// from a key object built once.
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  type Attestation,
  type AttestationBody,
  buildAttestation,
  generateSigningKey,
  type Hex,
  hexToBytes,
  type SigningKey,
  signatureMessage,
} from '@everdict/runrecord';
import { z } from 'zod';
import { AgentError } from '../errors.js';

export const KEY_FILE = 'signing.key';
export const PAIRING_FILE = 'agent-host.json';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.EVERDICT_AGENT_DIR ?? join(homedir(), '.everdict-agent');
}

export const HostPairing = z.strictObject({
  url: z.url(),
  hostId: z.string().min(1),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/),
  name: z.string().min(1),
});
export type HostPairing = z.infer<typeof HostPairing>;

/** The host's key, made (from 32 random bytes) and stored with mode 0600 on first use. */
export async function loadOrCreateKey(dir: string): Promise<SigningKey> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, KEY_FILE);
  try {
    const hex = (await readFile(path, 'utf8')).trim();
    if (!/^[0-9a-f]{64}$/.test(hex))
      throw new AgentError('bad_request', `${path} is not a 64-hex secret key`);
    return generateSigningKey(hexToBytes(hex));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = generateSigningKey(randomBytes(32));
  await writeFile(path, `${Buffer.from(key.secretKey).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
  return key;
}

export async function savePairing(dir: string, pairing: HostPairing): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, PAIRING_FILE);
  await writeFile(path, `${JSON.stringify(HostPairing.parse(pairing), null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** The saved pairing, or null when this host never paired. */
export async function loadPairing(dir: string): Promise<HostPairing | null> {
  let text: string;
  try {
    text = await readFile(join(dir, PAIRING_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = HostPairing.safeParse(JSON.parse(text));
  if (!parsed.success) throw new AgentError('bad_request', `${join(dir, PAIRING_FILE)} is not a pairing`);
  return parsed.data;
}

/** Signs an interval's attestation with the host's key: the wire body's fields and its address. */
export type IntervalSigner = (attestation: Attestation) => {
  readonly body: AttestationBody;
  readonly address: Hex;
};

/** PKCS#8 DER of an Ed25519 private key, up to its 32 bytes (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The signer of `key`; refuses a key whose public half is not its own. */
export function intervalSigner(key: SigningKey): IntervalSigner {
  const secret: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, key.secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(secret).export({ format: 'der', type: 'spki' });
  if (spki.subarray(spki.length - 32).toString('hex') !== key.publicKey)
    throw new AgentError('bad_request', 'the signing key does not match its public key');
  return (attestation) => {
    const { attestation: fields, address } = buildAttestation(attestation);
    const sig = sign(null, signatureMessage(address), secret).toString('hex');
    return {
      body: Object.freeze({
        ...fields,
        signature: Object.freeze({ alg: 'ed25519', key: key.publicKey, sig }),
      }),
      address,
    };
  };
}
