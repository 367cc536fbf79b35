// Runners: pairing tokens (minted by a tenant admin → tenant-scoped runner; by the service token → shared),
// pairing (token → runner id + credential, both secrets stored as SHA-256 hashes only; one runner per public
// key, ever), credential authentication, the runners' public keys (GET /keys). The runners lists, drain and
// revoke are admin.ts. What the placement index
// (`runner_images`, written here at pairing) answers is placeable.ts.
import { createHash, randomBytes } from 'node:crypto';
import { verifySignature } from '@everdict/headlog';
import { hexToBytes } from '@everdict/runrecord';
import { sql } from 'kysely';
import type { RunnerCredentials } from '../auth/runner-credentials.js';
import { iso, json } from '../db/numeric.js';
import type { Executor, Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import type { Deps } from '../services/context.js';
import type { Principal } from '../services/types.js';
import { Capabilities, PairInput, PairingTokenInput } from './schemas.js';

/** A pairing token is good for this long, once. */
export const PAIRING_TOKEN_TTL_MS = 15 * 60 * 1000;

const sha256 = (raw: string): string => createHash('sha256').update(raw, 'utf8').digest('hex');
/** A runner credential as it is stored (and announced on RUNNERS_CHANNEL): its SHA-256, hex. */
export const credentialHash = sha256;
const secret = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

export type RunnerState = 'active' | 'draining' | 'revoked';

/** Advisory lock class of a pairing's public key (the object id is hashtext(key)): one pairing per key at once. */
const PAIRING_KEY_LOCK_CLASS = 0x504b; // "PK"

/** Whether `runner` may learn anything of a run of `tenant`: a shared runner any, a tenant-scoped one its own. */
export const runnerMaySee = (runner: Pick<RunnerIdentity, 'tenantId'>, tenant: string): boolean =>
  runner.tenantId === null || runner.tenantId === tenant;

/** A runner as its credential resolves it. */
export interface RunnerIdentity {
  id: string;
  /** null: shared (any tenant's runs). */
  tenantId: string | null;
  name: string;
  publicKey: string;
  capabilities: Capabilities;
  state: RunnerState;
}

export interface RunnerView {
  id: string;
  name: string;
  shared: boolean;
  tenantId: string | null;
  capabilities: Capabilities;
  state: RunnerState;
  publicKey: string;
  createdAt: string;
  lastHeartbeatAt: string | null;
  revokedAt: string | null;
  /** When it was drained, and by whom (the API key's id, or `operator`): null if never. */
  drainedAt: string | null;
  drainedBy: string | null;
  /** Who revoked it (the API key's id, or `operator`): null unless revoked. */
  revokedBy: string | null;
  leasesHeld: number;
}

/** A `runners` row as the registry and the administration (admin.ts) read it. */
export type RunnerRow = {
  id: string;
  credential_hash: string;
  tenant_id: string | null;
  name: string;
  public_key: string;
  capabilities: unknown;
  state: RunnerState;
  created_at: Date;
  last_heartbeat_at: Date | null;
  revoked_at: Date | null;
  drained_at: Date | null;
  drained_by: string | null;
  revoked_by: string | null;
};

const identityOf = (r: RunnerRow): RunnerIdentity => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  publicKey: r.public_key,
  capabilities: Capabilities.parse(r.capabilities),
  state: r.state,
});

export function requireAdmin(p: Principal): void {
  if (p.role !== 'admin') throw new ControlPlaneError('forbidden', 'admin role required');
}

const parse = <T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: unknown } },
  v: unknown,
): T => {
  const r = schema.safeParse(v);
  if (!r.success) throw r.error;
  return r.data;
};

/** Mint a pairing token: `tenantId` null = a shared runner (the service token's door). Shown once. */
export async function mintPairingToken(
  deps: Deps,
  tenantId: string | null,
  createdBy: string,
  raw: unknown,
): Promise<{ token: string; expiresAt: string }> {
  const input = parse(PairingTokenInput, raw ?? {});
  const token = secret('evp_');
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + PAIRING_TOKEN_TTL_MS);
  await deps.db
    .insertInto('runner_pairing_tokens')
    .values({
      token_hash: sha256(token),
      tenant_id: tenantId,
      name: input.name ?? '',
      created_by: createdBy,
      created_at: now,
      expires_at: expiresAt,
      used_at: null,
      runner_id: null,
    })
    .execute();
  return { token, expiresAt: expiresAt.toISOString() };
}

/**
 * The index rows of a runner's capabilities: one per distinct kind × distinct image (a kind or an image listed
 * twice is one row: the primary key is (runner_id, kind, image)).
 */
function imageRows(runnerId: string, tenantId: string | null, caps: Capabilities) {
  const kinds = [...new Set(caps.kinds)];
  const images = [...new Set(caps.images)];
  return kinds.flatMap((kind) =>
    images.map((image) => ({ runner_id: runnerId, tenant_id: tenantId, kind, image })),
  );
}

/**
 * Redeem a pairing token (hashed at rest, single use, before its 15 minutes end) for `pairedId` — a runner or
 * an agent host, in the caller's transaction: its tenant (null: shared). The token row is claimed by this
 * UPDATE: a second redemption (even a concurrent one) finds it used. 401 `invalid_pairing_token` otherwise.
 */
export async function redeemPairingToken(
  tx: Tx,
  token: string,
  pairedId: string,
  now: Date,
): Promise<{ tenant_id: string | null }> {
  const claimed = await tx
    .updateTable('runner_pairing_tokens')
    .set({ used_at: now, runner_id: pairedId })
    .where('token_hash', '=', sha256(token))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    // A token is its minting admin key's grant: once that key is revoked the token pairs nothing (and stays
    // unspent). The service token's shared tokens (`created_by: 'service'`) have no key row.
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('api_keys')
            .select('api_keys.id')
            .whereRef('api_keys.id', '=', 'runner_pairing_tokens.created_by')
            .where('api_keys.revoked_at', 'is not', null),
        ),
      ),
    )
    .returning(['tenant_id'])
    .executeTakeFirst();
  if (!claimed)
    throw new ControlPlaneError(
      'invalid_pairing_token',
      'the pairing token is unknown, used, expired, or its minting key was revoked',
    );
  return claimed;
}

/**
 * 409 `conflict` (`details.reason: 'public_key_in_use'`) when `publicKey` is registered already — to a runner or
 * to an agent host (agents/hosts.ts pairs through here too), active, draining or revoked: a key names one
 * identity. An attestation is verified against its signer's registered key, so a second holder of the key would
 * sign as the first (GET /keys would list the key under two ids), and a revoked holder's key never comes back
 * (its old records still verify with it, under its id). Serialized per key (an advisory lock held to the
 * commit, one lock class for both registries), so two pairings of one key at once — two runners, two hosts, or
 * one of each — register one.
 */
export async function refuseRegisteredKey(tx: Tx, publicKey: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${PAIRING_KEY_LOCK_CLASS}::int, hashtext(${publicKey}))`.execute(tx);
  const { rows } = await sql<{ kind: string }>`
    SELECT 'runner' AS kind FROM runners WHERE public_key = ${publicKey}
    UNION ALL SELECT 'agent host' AS kind FROM agent_hosts WHERE public_key = ${publicKey}
    LIMIT 1`.execute(tx);
  const holder = rows[0];
  if (holder)
    throw new ControlPlaneError(
      'conflict',
      `this public key is already registered to ${holder.kind === 'runner' ? 'a runner' : 'an agent host'} (revoked ones included): pair with a new key`,
      { reason: 'public_key_in_use' },
    );
}

/** The domain tag of a runner's pairing proof (`pairingMessage`, `POST /runners/pair`). */
export const PAIRING_PROOF_TAG = 'everdict-runner-pair/1';
/** The domain tag of an agent host's pairing proof (`POST /agents/hosts/pair`, agents/hosts.ts). */
export const AGENT_HOST_PAIRING_PROOF_TAG = 'everdict-agent-host-pair/1';
/** Whose pairing a proof is for: a runner's proof never verifies as an agent host's, nor the other way. */
export type PairingProofTag = typeof PAIRING_PROOF_TAG | typeof AGENT_HOST_PAIRING_PROOF_TAG;

/**
 * What a host signs to pair (its proof that it holds the key it registers): its domain tag (`tag`: a runner's,
 * by default, or an agent host's), the pairing token's SHA-256 (hex) and the public key, one per line (UTF-8,
 * no trailing newline). Bound to the token, a proof is good for one pairing: replayed with another token it
 * does not verify; bound to the tag, a runner's proof pairs no agent host, and an agent host's no runner.
 */
export const pairingMessage = (
  token: string,
  publicKey: string,
  tag: PairingProofTag = PAIRING_PROOF_TAG,
): Uint8Array => new TextEncoder().encode(`${tag}\n${sha256(token)}\n${publicKey}`);

/**
 * 401 `invalid_pairing_token` (`details.reason: 'bad_signature'`) unless `signature` is the public key's strict
 * (RFC 8032) Ed25519 signature of `pairingMessage` under `tag`: called before the token is touched, so a
 * refused pairing spends nothing. `signature` and `publicKey` are hex already (the callers' zod schemas).
 */
export function requireProofOfPossession(
  input: { token: string; publicKey: string; signature: string },
  tag: PairingProofTag = PAIRING_PROOF_TAG,
): void {
  const ok = verifySignature(
    hexToBytes(input.signature),
    pairingMessage(input.token, input.publicKey, tag),
    hexToBytes(input.publicKey),
  );
  if (!ok)
    throw new ControlPlaneError(
      'invalid_pairing_token',
      `the pairing signature is not the public key’s signature of the pairing message (${tag})`,
      { reason: 'bad_signature' },
    );
}

/**
 * Redeem a pairing token (single use, before it expires): a runner id and its credential (shown once). The
 * caller proves it holds the key's secret half (`signature`, `requireProofOfPossession`) before the token is
 * read. A public key registered already is refused (`refuseRegisteredKey`) in the token's transaction: the
 * token stays unspent.
 */
export async function pair(deps: Deps, raw: unknown): Promise<{ runnerId: string; credential: string }> {
  const input = parse(PairInput, raw);
  const credential = secret('evr_');
  const runnerId = deps.ids('rnr');
  return redeemForKey(deps, input, runnerId, PAIRING_PROOF_TAG, async (tx, tenantId, now) => {
    await tx
      .insertInto('runners')
      .values({
        id: runnerId,
        tenant_id: tenantId,
        name: input.name,
        public_key: input.publicKey,
        credential_hash: sha256(credential),
        capabilities: json(input.capabilities),
        state: 'active',
        created_at: now,
        last_heartbeat_at: null,
        revoked_at: null,
      })
      .execute();
    await tx
      .insertInto('runner_images')
      .values(imageRows(runnerId, tenantId, input.capabilities))
      .execute();
    return { runnerId, credential };
  });
}

/**
 * One pairing, a runner's or an agent host's: the proof of possession under `tag` (before the token is read: a
 * refused proof spends nothing), then in one transaction the token redeemed for `pairedId`, the key refused when
 * any identity holds it already (`refuseRegisteredKey`, after the token: an unknown token learns nothing of
 * keys; the refusal rolls the token's claim back), and `register` — the identity's own rows, in the token's
 * tenant (null: shared).
 */
export async function redeemForKey<T>(
  deps: Deps,
  input: { token: string; publicKey: string; signature: string },
  pairedId: string,
  tag: PairingProofTag,
  register: (tx: Tx, tenantId: string | null, now: Date) => Promise<T>,
): Promise<T> {
  requireProofOfPossession(input, tag);
  const now = deps.clock();
  return withTx(deps.db, async (tx) => {
    const claimed = await redeemPairingToken(tx, input.token, pairedId, now);
    await refuseRegisteredKey(tx, input.publicKey);
    return register(tx, claimed.tenant_id, now);
  });
}

/**
 * A credential → its runner; 401 unless paired and not revoked. With `cache` (this replica's, evicted by
 * revoke and drain here and by RUNNERS_CHANNEL from the others), a credential seen lately costs no query.
 */
export async function authenticateRunner(
  ex: Executor,
  credential: string,
  cache?: RunnerCredentials,
): Promise<RunnerIdentity> {
  const read = async (hash: string): Promise<RunnerIdentity | undefined> => {
    const row = await ex
      .selectFrom('runners')
      .selectAll()
      .where('credential_hash', '=', hash)
      .executeTakeFirst();
    return row && row.state !== 'revoked' ? identityOf(row as RunnerRow) : undefined;
  };
  const hash = sha256(credential);
  // With the replica's cache: one read at a time per credential, a revocation heard mid-read kept (ttl-cache.ts).
  const runner = await (cache ? cache.lookup(hash, read) : read(hash));
  if (!runner)
    throw new ControlPlaneError('invalid_runner_credential', 'a valid runner credential is required');
  return runner;
}

/** How many leases each of these holders (runners, agent hosts) holds now; absent = none. */
export async function leasesHeldBy(ex: Executor, holders: readonly string[]): Promise<Map<string, number>> {
  if (holders.length === 0) return new Map();
  const held = await ex
    .selectFrom('run_leases')
    .select(['holder', sql<number>`count(*)::int`.as('n')])
    .where('holder', 'in', holders)
    .groupBy('holder')
    .execute();
  return new Map(held.map((h) => [h.holder, Number(h.n)]));
}

/** Every runner's public key, for GET /keys (revoked ones with `revokedAt`: old records still verify). */
export function runnerKeys(ex: Executor): Promise<PublicKeyEntry[]> {
  return hostKeys(ex, 'runners', 'runner');
}

/** The public keys of one kind of host (runners, agent hosts) in pairing order, revoked ones with `revokedAt`. */
export async function hostKeys(
  ex: Executor,
  table: 'runners' | 'agent_hosts',
  kind: 'runner' | 'agent-host',
): Promise<PublicKeyEntry[]> {
  const rows = await ex
    .selectFrom(table)
    .select(['id', 'name', 'public_key', 'revoked_at'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    kind,
    id: r.id,
    name: r.name,
    key: r.public_key,
    ...(r.revoked_at ? { revokedAt: iso(r.revoked_at)! } : {}),
  }));
}
