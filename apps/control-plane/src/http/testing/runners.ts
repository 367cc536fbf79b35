// Test support: a runner paired with the real app (a pairing token minted by the admin key, an Ed25519 key
// made here, the protocol's `/runners/pair`), and its lease requests.
import { randomBytes } from 'node:crypto';
import { sign } from '@everdict/headlog';
import {
  type Attestation,
  bytesToHex,
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  type SigningKey,
  signAttestation,
} from '@everdict/runrecord';
import { expect } from 'vitest';
import { journalRootOf } from '../../runners/intervals.js';
import {
  AGENT_HOST_PAIRING_PROOF_TAG,
  type PairingProofTag,
  pairingMessage,
} from '../../runners/registry.js';
import { ADMIN_KEY, call, INTERNAL_TOKEN } from './harness.js';

type App = Parameters<typeof call>[0];

export interface TestRunner {
  readonly id: string;
  readonly credential: string;
  readonly key: SigningKey;
}

/** The fields of a lease the tests read (the protocol's lease has more). */
export interface TestLease {
  readonly runId: string;
  readonly epoch: number;
  readonly seqFrom: number;
  readonly unitId: Hex;
  readonly grantsId: Hex;
  readonly recordHead: Hex;
}

export const COMMAND_CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 8 };

/**
 * `key`'s proof of possession for pairing with `token`: the `signature` of `POST /runners/pair` (the default
 * tag) or, with `AGENT_HOST_PAIRING_PROOF_TAG`, of `POST /agents/hosts/pair`.
 */
export const pairingSignature = (token: string, key: SigningKey, tag?: PairingProofTag): string =>
  bytesToHex(sign(pairingMessage(token, key.publicKey, tag), key.secretKey));

/** A key (default: a new one) with its proof for pairing with `token`: the `publicKey` and `signature` of a pair body. */
export function pairingProof(
  token: string,
  key: SigningKey = generateSigningKey(randomBytes(32)),
  tag?: PairingProofTag,
): { publicKey: string; signature: string } {
  return { publicKey: key.publicKey, signature: pairingSignature(token, key, tag) };
}

/** `pairingProof` for an agent host (`POST /agents/hosts/pair`: the agent host's domain tag). */
export const agentHostPairingProof = (
  token: string,
  key?: SigningKey,
): { publicKey: string; signature: string } => pairingProof(token, key, AGENT_HOST_PAIRING_PROOF_TAG);

/**
 * A pairing token (201 expected): the admin key's (`POST /runners/pairing-tokens`, a tenant runner) or, `shared`,
 * the service token's (`POST /internal/runners/pairing-tokens`, a shared runner).
 */
export async function mintPairingToken(
  app: App,
  o: { shared?: boolean; name?: string } = {},
): Promise<string> {
  const body = o.name === undefined ? {} : { name: o.name };
  const minted = o.shared
    ? await call(app, 'POST', '/internal/runners/pairing-tokens', { key: INTERNAL_TOKEN, body })
    : await call(app, 'POST', '/runners/pairing-tokens', { key: ADMIN_KEY, body });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  return String(minted.body.token);
}

/** Pair a runner (201 expected) with `capabilities` (default: command runs, the default image, 8 slots). */
export async function pairTestRunner(
  app: App,
  o: { name?: string; capabilities?: object; adminKey?: string } = {},
): Promise<TestRunner> {
  const name = o.name ?? 'runner';
  const minted = await call(app, 'POST', '/runners/pairing-tokens', {
    key: o.adminKey ?? ADMIN_KEY,
    body: { name },
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  const key = generateSigningKey(randomBytes(32));
  const paired = await call(app, 'POST', '/runners/pair', {
    key: null,
    body: {
      token: minted.body.token,
      publicKey: key.publicKey,
      signature: pairingSignature(String(minted.body.token), key),
      name,
      capabilities: o.capabilities ?? COMMAND_CAPS,
    },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return { id: String(paired.body.runnerId), credential: String(paired.body.credential), key };
}

/** `POST /runner/v1/leases` as `runner` (200 expected): the leases granted. */
export async function leaseRuns(
  app: App,
  runner: TestRunner,
  free: number,
  waitMs = 0,
): Promise<TestLease[]> {
  const res = await call(app, 'POST', '/runner/v1/leases', {
    key: runner.credential,
    body: { free, waitMs },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.leases as TestLease[];
}

/**
 * A signed interval attestation for `lease` (succeeded, exit 0, 250 ms, 1 mJ estimated, the empty journal
 * unless `over` says otherwise), bound to the lease's unit, grants and record head.
 */
export function signTestInterval(
  lease: Pick<TestLease, 'unitId' | 'grantsId' | 'recordHead'>,
  secretKey: Uint8Array,
  over: Partial<Attestation> = {},
): ReturnType<typeof signAttestation> {
  return signAttestation(
    {
      unitId: lease.unitId,
      grantsId: lease.grantsId,
      recordHead: lease.recordHead,
      startedMs: 1_764_547_200_000n,
      endedMs: 1_764_547_200_250n,
      activeUj: 1_000n,
      provenance: 'estimated',
      meter: 'test',
      journalRoot: journalRootOf([]) as Hex,
      outcome: 'succeeded',
      exitCode: 0,
      ...over,
    },
    secretKey,
  );
}

/** An artifact as a completion claims it (`outputs.artifacts[]`). */
export interface TestArtifactClaim {
  readonly name: string;
  readonly uri: string;
  readonly bytes: number;
  readonly digest: string;
}

/** `PUT /runner/v1/runs/:id/artifacts` as `runner` under `lease` (201 expected): the claim to list for it. */
export async function uploadTestArtifact(
  app: App,
  runner: TestRunner,
  lease: Pick<TestLease, 'runId' | 'epoch'>,
  path: string,
  body: string,
): Promise<TestArtifactClaim> {
  const res = await app.request(
    `/runner/v1/runs/${lease.runId}/artifacts?epoch=${lease.epoch}&path=${encodeURIComponent(path)}`,
    {
      method: 'PUT',
      headers: { authorization: `Bearer ${runner.credential}`, 'content-type': 'application/octet-stream' },
      body,
    },
  );
  expect(res.status).toBe(201);
  const s = (await res.json()) as { address: string; size: number };
  return { name: path, uri: `artifact:${s.address}`, bytes: s.size, digest: s.address };
}

/** `POST /runner/v1/runs/:id/complete` as `runner`: `outputs` (a summary, `artifacts` if given), signed. */
export function completeTestLease(app: App, runner: TestRunner, lease: TestLease, artifacts?: unknown[]) {
  return call(app, 'POST', `/runner/v1/runs/${lease.runId}/complete`, {
    key: runner.credential,
    body: {
      epoch: lease.epoch,
      outputs: { summary: 'done', ...(artifacts ? { artifacts } : {}) },
      attestation: encodeAttestationBody(signTestInterval(lease, runner.key.secretKey).body),
    },
  });
}

/** `GET /runs/:id/artifact?path=` with `key` (the admin key by default): the raw response. */
export function downloadTestArtifact(
  app: App,
  runId: string,
  path: string,
  key = ADMIN_KEY,
): Promise<Response> {
  return Promise.resolve(
    app.request(`/runs/${runId}/artifact?path=${encodeURIComponent(path)}`, {
      headers: { authorization: `Bearer ${key}` },
    }),
  );
}

/** A command run created with the admin key (201 expected) and leased by `runner`: its lease. */
export async function leaseCommandRun(
  app: App,
  runner: TestRunner,
  command: string[] = ['true'],
): Promise<TestLease> {
  const created = await call(app, 'POST', '/runs', {
    key: ADMIN_KEY,
    body: { kind: 'command', subject: { command } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const [lease] = await leaseRuns(app, runner, 1);
  if (!lease) throw new Error('no lease granted');
  return lease;
}
