// A host's identity, one module for the runner (apps/runner) and the agent host (apps/agent): its state
// directory (mode 0700) holds its Ed25519 secret key (`signing.key`, 64 hex + newline, mode 0600 — it never
// leaves the directory) and its pairing (a JSON file each app names and shapes, mode 0600); the signer makes
// the same `sandbox.attestation/1` body and signature as runrecord's `signAttestation` (Ed25519 is
// deterministic: the bytes are identical), with node:crypto's native Ed25519 from a key object built once per
// key — the pure-JS signer recomputed the public key on every signature. Node only: import it from the
// `@everdict/client/host-identity` subpath (the package's index stays free of node:fs and node:crypto).
// Each app keeps its own error type: the refusals here are made by the caller's `fail`.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
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

/** The secret key's file in a host's state directory. */
export const SIGNING_KEY_FILE = 'signing.key';

/** Makes the caller's error (its package's one error type) for a refusal of this module. */
export type HostIdentityFail = (message: string) => Error;

/** `env[variable]`, else `~/<fallback>` (the runner: EVERDICT_RUNNER_DIR, the agent: EVERDICT_AGENT_DIR). */
export function hostStateDir(
  variable: string,
  fallback: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return env[variable] ?? join(homedir(), fallback);
}

// Every file here is written whole or not at all, one rule for all of them: staged beside its name (`stageFile`:
// a new file, O_EXCL, mode 0600, flushed), then renamed over it (`writeStateFile`, the runner's pairing) or
// linked to it (`loadOrCreateSigningKey`: the name is taken once, never replaced), then the directory flushed
// (`syncDirectory`). A crash leaves the old file or the new one — never a truncated one — and at worst a
// `<name>.<pid>.<12 hex>.tmp` beside it (after the key's link: a second name of the key itself), which the
// next stage or key load in that directory removes (`removeStaleStaged`).

/** A staged file's name: `<file>.<pid>.<12 hex>.tmp` (`stageFile`). */
const STAGED = /^(.+)\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/** How old a staged file must be before another stage or load may remove it (no writer holds one this long). */
export const STALE_STAGED_MS = 60_000;

/** This process's staged files not yet renamed or linked by this module (`replaceFile`, `createFileOnce`). */
const inFlight = new Set<string>();

/** Whether process `pid` exists (on this host: a state directory is local). EPERM: it does, as another user. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the staged files a crashed writer left in `dir` (only names of `stageFile`'s pattern, never a state
 * file): one is stale when it is older than `STALE_STAGED_MS` and no writer can be using it — its process is
 * gone, or it is this process and not one of its stages in flight (a restarted container's runner is often the
 * same pid as the one that crashed). A live other process's file is left alone, whatever its age. Removing a
 * name only unlinks it: a leftover of the key's first link (a second name of `signing.key`) leaves the key.
 * Answers the names removed. A missing directory is no error.
 */
export async function removeStaleStaged(dir: string, now: number = Date.now()): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = STAGED.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    const pid = Number(m[2]);
    if (pid === process.pid ? inFlight.has(path) : alive(pid)) continue;
    const info = await stat(path).catch(() => null);
    if (!info?.isFile() || now - info.mtimeMs < STALE_STAGED_MS) continue;
    await rm(path, { force: true });
    removed.push(name);
  }
  return removed;
}

/**
 * `text` in a new file beside `path` (O_EXCL, mode 0600, flushed to disk): its name, to rename or link. Stale
 * staged files in the directory are removed first (`removeStaleStaged`).
 */
export async function stageFile(path: string, text: string): Promise<string> {
  await removeStaleStaged(dirname(path));
  const staged = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  inFlight.add(staged);
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(staged, 'wx', 0o600);
  } catch (err) {
    inFlight.delete(staged);
    throw err;
  }
  try {
    try {
      await file.writeFile(text);
      await file.chmod(0o600); // whatever the umask
      await file.sync();
    } finally {
      await file.close();
    }
  } catch (err) {
    await rm(staged, { force: true });
    inFlight.delete(staged);
    throw err;
  }
  return staged;
}

/** A staged file of this process is renamed or removed: a later sweep may take a leftover of that name. */
function settled(staged: string): void {
  inFlight.delete(staged);
}

/** Flushes `dir`'s entries: the renames and links made in it, durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const entries = await open(dir, 'r');
  try {
    await entries.sync();
  } finally {
    await entries.close();
  }
}

/** `text` as `path` (0600), replacing any file there at once: staged beside it, renamed over it. */
async function replaceFile(path: string, text: string): Promise<void> {
  const staged = await stageFile(path, text);
  try {
    await rename(staged, path);
  } catch (err) {
    await rm(staged, { force: true });
    throw err;
  } finally {
    settled(staged);
  }
  await syncDirectory(dirname(path));
}

/** `text` as `path` (0600) unless a file is there already: false then, the file there left as it was. */
async function createFileOnce(path: string, text: string): Promise<boolean> {
  const staged = await stageFile(path, text);
  try {
    await link(staged, path); // EEXIST: another writer took the name first
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await rm(staged, { force: true });
    settled(staged);
  }
  await syncDirectory(dirname(path));
  return true;
}

/** The host's key in `dir`, or null when there is none; `fail` when the file is not a 64-hex secret key. */
export async function loadSigningKey(dir: string, fail: HostIdentityFail): Promise<SigningKey | null> {
  const path = join(dir, SIGNING_KEY_FILE);
  const text = await readStateFile(dir, SIGNING_KEY_FILE);
  if (text === null) return null;
  const hex = text.trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw fail(`${path} is not a 64-hex secret key`);
  return generateSigningKey(hexToBytes(hex));
}

/**
 * The host's key in `dir`, made (from 32 random bytes) and stored with mode 0600 on first use; `fail` when
 * the file is not a 64-hex secret key. The key file appears whole (staged, then linked to its name); of
 * concurrent first uses — processes or calls — the first link wins and the others load its key: one key.
 */
export async function loadOrCreateSigningKey(dir: string, fail: HostIdentityFail): Promise<SigningKey> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await removeStaleStaged(dir);
  const known = await loadSigningKey(dir, fail);
  if (known) return known;
  const key = generateSigningKey(randomBytes(32));
  const text = `${Buffer.from(key.secretKey).toString('hex')}\n`;
  if (await createFileOnce(join(dir, SIGNING_KEY_FILE), text)) return key;
  const winner = await loadSigningKey(dir, fail);
  if (!winner) throw fail(`${join(dir, SIGNING_KEY_FILE)} vanished while it was made`);
  return winner;
}

/**
 * A new key in place of the one in `dir` (staged beside it and renamed over it, 0600): for a host whose key the
 * control plane lists already — a pairing refuses a registered key, a revoked host's too — and that pairs anew.
 */
export async function replaceSigningKey(dir: string): Promise<SigningKey> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const key = generateSigningKey(randomBytes(32));
  await replaceFile(join(dir, SIGNING_KEY_FILE), `${Buffer.from(key.secretKey).toString('hex')}\n`);
  return key;
}

/**
 * Write `value` as pretty JSON + newline to `dir/file` with mode 0600 (the directory made 0700): staged beside
 * it and renamed over it, so a reader or a crash sees the old file or the new one, never a part of one.
 */
export async function writeStateFile(dir: string, file: string, value: unknown): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await replaceFile(join(dir, file), `${JSON.stringify(value, null, 2)}\n`);
}

/** The text of `dir/file`, or null when there is none (any other read error is thrown). */
export async function readStateFile(dir: string, file: string): Promise<string | null> {
  try {
    return await readFile(join(dir, file), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** The domain tag of a runner's pairing proof, `POST /runners/pair` (the control plane's runners/registry.ts). */
export const PAIRING_PROOF_TAG = 'everdict-runner-pair/1';
/** The domain tag of an agent host's pairing proof, `POST /agents/hosts/pair`. */
export const AGENT_HOST_PAIRING_PROOF_TAG = 'everdict-agent-host-pair/1';
/** Whose pairing a proof is for: a runner's proof never verifies as an agent host's, nor the other way. */
export type PairingProofTag = typeof PAIRING_PROOF_TAG | typeof AGENT_HOST_PAIRING_PROOF_TAG;

/**
 * What a host signs to pair: the domain tag (`tag`: a runner's by default, or `AGENT_HOST_PAIRING_PROOF_TAG`),
 * the pairing token's SHA-256 (hex) and the public key, one per line (UTF-8, no trailing newline).
 */
export function pairingMessage(
  token: string,
  publicKey: string,
  tag: PairingProofTag = PAIRING_PROOF_TAG,
): Buffer {
  const digest = createHash('sha256').update(token, 'utf8').digest('hex');
  return Buffer.from(`${tag}\n${digest}\n${publicKey}`, 'utf8');
}

/**
 * `key`'s proof that it holds its secret half, for pairing with `token`: the `signature` (128 hex) of
 * `POST /runners/pair` (the default tag) or, with `AGENT_HOST_PAIRING_PROOF_TAG`, of `POST /agents/hosts/pair`.
 */
export function pairingSignature(
  key: SigningKey,
  token: string,
  tag: PairingProofTag = PAIRING_PROOF_TAG,
): string {
  return sign(null, pairingMessage(token, key.publicKey, tag), secretKeyObject(key)).toString('hex');
}

/** Signs an interval's attestation with the host's key: the wire body's fields and its address. */
export type AttestationSigner = (attestation: Attestation) => {
  readonly body: AttestationBody;
  readonly address: Hex;
};

/** PKCS#8 DER of an Ed25519 private key, up to its 32 bytes (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

const signers = new WeakMap<SigningKey, AttestationSigner>();

/** node:crypto's private key object of `key`. */
function secretKeyObject(key: SigningKey): KeyObject {
  return createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, key.secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
}

/** The signer of `key` (made once per key object); `fail` when the key's public half is not its own. */
export function attestationSigner(key: SigningKey, fail: HostIdentityFail): AttestationSigner {
  const known = signers.get(key);
  if (known) return known;
  const secret = secretKeyObject(key);
  const spki = createPublicKey(secret).export({ format: 'der', type: 'spki' });
  if (spki.subarray(spki.length - 32).toString('hex') !== key.publicKey)
    throw fail('the signing key does not match its public key');
  const signer: AttestationSigner = (attestation) => {
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
  signers.set(key, signer);
  return signer;
}
