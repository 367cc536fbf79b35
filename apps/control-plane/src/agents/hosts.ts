// Agent hosts (issue 16 item 4): an `everdict-agent` process with an Ed25519 key of its own, paired like a
// runner. A pairing token (minted by a tenant admin → a tenant-scoped host, or by the service token → a
// shared one; the runners' token table, single use, 15 min) is redeemed with the host's public key at
// `POST /agents/hosts/pair`, with the key's signature of `everdict-agent-host-pair/1\n<sha256(token)>\n<key>`
// (its proof of possession, checked before the token is read: runners/registry.ts); the host's id is then its
// lease holder name, and every interval it ends carries a `sandbox.attestation/1` it signed
// (agents/attestation.ts checks it). GET /keys lists the keys.
// A tenant admin lists (GET /agents/hosts) and revokes (POST /agents/hosts/:id/revoke) its tenant's hosts as
// it does its runners: a revoked host's next lease, heartbeat, call or report is 401 `invalid_agent_host`,
// and the leases it held expire in the revoking transaction (the lease sweep then requeues their turns).
// With `requirePaired` (EVERDICT_AGENT_REQUIRE_PAIRED=1) a holder that is no paired host is refused alike.
//
// A leased call and its host's revoke serialize on the host's row: a report, tool call or transcript append
// holds it FOR SHARE (`admitHolder`, in the transaction that checks the lease and writes) to its commit, the
// revoke locks it FOR UPDATE before it expires the host's leases. A call that comes first settles (a report
// releases its lease before the revoke reads it); one that comes after reads the host revoked (401). Lock
// order: a transcript append's writer lock (trajectory/run-lock.ts), the turn's row, then the host's row,
// then the lease; the revoke takes the host's row, then the leases — never a turn's row (the sweep that
// requeues them runs after its commit). A grant takes the host's row first, then claims turns SKIP LOCKED.
import { z } from 'zod';
import { iso } from '../db/numeric.js';
import type { Executor, Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import { actorOf, OPERATOR, type RunnerAdmin } from '../runners/admin.js';
import { AGENT_HOST_PAIRING_PROOF_TAG, hostKeys, leasesHeldBy, redeemForKey } from '../runners/registry.js';
import { PairingSignature } from '../runners/schemas.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';

export const AgentHostPairInput = z.strictObject({
  token: z.string().min(1).max(512),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits'),
  /** Ed25519 signature (128 lowercase hex) of `everdict-agent-host-pair/1\n<sha256(token) hex>\n<publicKey>` (registry.ts `pairingMessage`). */
  signature: PairingSignature,
  name: z.string().min(1).max(200),
});
export type AgentHostPairInput = z.input<typeof AgentHostPairInput>;

/** A paired agent host, as its lease holder name resolves it. */
export interface AgentHost {
  readonly id: string;
  /** null: shared (any tenant's turns). */
  readonly tenantId: string | null;
  readonly name: string;
  readonly publicKey: string;
  readonly state: 'active' | 'revoked';
}

/** An agent host as GET /agents/hosts lists it. */
export interface AgentHostView {
  readonly id: string;
  readonly name: string;
  readonly shared: boolean;
  readonly tenantId: string | null;
  readonly state: 'active' | 'revoked';
  readonly publicKey: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
  /** Who revoked it (the API key's id): null unless revoked. */
  readonly revokedBy: string | null;
  readonly leasesHeld: number;
}

/** Who may hold agent turn leases: with `requirePaired`, only paired, non-revoked agent hosts. */
export interface HolderPolicy {
  readonly requirePaired: boolean;
}

/**
 * Redeem a pairing token for an agent host: its id (the holder name its leases and reports carry). The caller
 * proves it holds the key's secret half first — `signature` over the agent host's own domain tag (a runner's
 * proof does not verify here): 401 `invalid_pairing_token`, `reason: bad_signature`, before the token is read.
 */
export async function pairAgentHost(
  deps: Deps,
  raw: unknown,
): Promise<{ hostId: string; publicKey: string }> {
  const input = asControlPlaneError(() => AgentHostPairInput.parse(raw));
  const hostId = deps.ids('agh');
  // A key names one identity, runner or agent host (registry.ts): 409 `public_key_in_use`, the token unspent.
  return redeemForKey(deps, input, hostId, AGENT_HOST_PAIRING_PROOF_TAG, async (tx, tenantId, now) => {
    await tx
      .insertInto('agent_hosts')
      .values({
        id: hostId,
        tenant_id: tenantId,
        name: input.name,
        public_key: input.publicKey,
        state: 'active',
        created_at: now,
        revoked_at: null,
      })
      .execute();
    return { hostId, publicKey: input.publicKey };
  });
}

/** Every agent host's public key, for GET /keys (revoked ones with `revokedAt`: old records still verify). */
export function agentHostKeys(ex: Executor): Promise<PublicKeyEntry[]> {
  return hostKeys(ex, 'agent_hosts', 'agent-host');
}

/**
 * The paired host `holder` is (null: an unpaired holder, allowed unless `requirePaired`), read under a share
 * lock (a revoke committed before is seen; one after waits). 401 `invalid_agent_host` for a revoked host —
 * and for an unpaired holder under `requirePaired` — before anything is read or written for the call.
 */
export async function admitHolder(
  ex: Executor,
  holder: string,
  policy: HolderPolicy,
): Promise<AgentHost | null> {
  const row = await ex
    .selectFrom('agent_hosts')
    .select(['id', 'tenant_id', 'name', 'public_key', 'state'])
    .where('id', '=', holder)
    .forShare()
    .executeTakeFirst();
  if (row?.state === 'revoked')
    throw new ControlPlaneError('invalid_agent_host', `agent host ${holder} is revoked`, {
      reason: 'revoked',
      holder,
    });
  if (!row && policy.requirePaired)
    throw new ControlPlaneError(
      'invalid_agent_host',
      `the lease holder ${holder} is no paired agent host, and this control plane requires one (EVERDICT_AGENT_REQUIRE_PAIRED=1)`,
      { reason: 'unpaired', holder },
    );
  if (!row) return null;
  return { id: row.id, tenantId: row.tenant_id, name: row.name, publicKey: row.public_key, state: row.state };
}

/**
 * The agent hosts a principal may see: its tenant's, and the shared ones (marked `shared`). The operator (the
 * service token's door, `/internal/agents/hosts`) sees the shared ones only: the hosts it administers.
 */
export async function listAgentHosts(ex: Executor, who: RunnerAdmin): Promise<AgentHostView[]> {
  const rows = await ex
    .selectFrom('agent_hosts')
    .selectAll()
    .where((eb) =>
      who === OPERATOR
        ? eb('tenant_id', 'is', null)
        : eb.or([eb('tenant_id', '=', who.tenantId), eb('tenant_id', 'is', null)]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const counts = await leasesHeldBy(
    ex,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    shared: r.tenant_id === null,
    tenantId: r.tenant_id,
    state: r.state,
    publicKey: r.public_key,
    createdAt: iso(r.created_at)!,
    revokedAt: iso(r.revoked_at),
    revokedBy: r.revoked_by,
    leasesHeld: counts.get(r.id) ?? 0,
  }));
}

/**
 * Revoke (a tenant admin, its own tenant's host; a shared host is the operator's — 403 here naming its door,
 * `/internal/agents/hosts/:id/revoke`, as for runners; the operator's door reaches no tenant's host: 404):
 * its calls are refused at once, and `expire` (the lease rule's, runners/leases.ts `expireHolder`) expires
 * every lease it holds in the same transaction — the caller then sweeps (revoke.ts). Answers each expired
 * lease's turn (`expired`), and each with its status at the revoke (`held` ; read, not locked: the revoke never locks a turn's row).
 * Idempotent. Recorded on the host's row: who (`revoked_by`, the key's id) and when (`revoked_at`), listed by
 * GET /agents/hosts (`revokedBy`, `revokedAt`); a revoke of a revoked host records nothing.
 */
export async function revokeAgentHost(
  deps: Deps,
  who: RunnerAdmin,
  hostId: string,
  expire: (tx: Tx, holder: string) => Promise<string[]>,
): Promise<{ expired: string[]; held: { runId: string; status: string }[] }> {
  if (who !== OPERATOR && who.role !== 'admin')
    throw new ControlPlaneError('forbidden', 'admin role required');
  return withTx(deps.db, async (tx) => {
    const row = await tx
      .selectFrom('agent_hosts')
      .select(['id', 'state', 'tenant_id'])
      .where('id', '=', hostId)
      .where((eb) =>
        who === OPERATOR
          ? eb('tenant_id', 'is', null)
          : eb.or([eb('tenant_id', '=', who.tenantId), eb('tenant_id', 'is', null)]),
      )
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw notFound('agent host', hostId);
    // Listed to the tenant (it may hold the tenant's turns), so not "not found": the operator's to revoke.
    if (who !== OPERATOR && row.tenant_id === null)
      throw new ControlPlaneError(
        'forbidden',
        `agent host ${hostId} is shared (it may hold every tenant's turns): the operator revokes it, at POST /internal/agents/hosts/${hostId}/revoke with the service token`,
        { id: hostId, reason: 'shared_agent_host' },
      );
    if (row.state === 'revoked') return { expired: [], held: [] };
    await tx
      .updateTable('agent_hosts')
      .set({ state: 'revoked', revoked_at: deps.clock(), revoked_by: actorOf(who) })
      .where('id', '=', hostId)
      .execute();
    const ids = await expire(tx, hostId);
    if (ids.length === 0) return { expired: [], held: [] };
    const rows = await tx.selectFrom('runs').select(['id', 'status']).where('id', 'in', ids).execute();
    const status = new Map(rows.map((r) => [r.id, r.status as string]));
    return { expired: ids, held: ids.map((runId) => ({ runId, status: status.get(runId) ?? 'unknown' })) };
  });
}
