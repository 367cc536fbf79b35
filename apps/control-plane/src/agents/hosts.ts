// Agent hosts (issue 16 item 4): an `everdict-agent` process with an Ed25519 key of its own, paired like a
// runner. A pairing token (minted by a tenant admin → a tenant-scoped host, or by the service token → a
// shared one; the runners' token table, single use, 15 min) is redeemed with the host's public key at
// `POST /agents/hosts/pair`; the host's id is then its lease holder name, and every interval it ends carries
// a `sandbox.attestation/1` it signed (agents/attestation.ts checks it). GET /keys lists the keys.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { iso } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';

export const AgentHostPairInput = z.strictObject({
  token: z.string().min(1).max(512),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits'),
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

const sha256 = (raw: string): string => createHash('sha256').update(raw, 'utf8').digest('hex');

/** Redeem a pairing token for an agent host: its id (the holder name its leases and reports carry). */
export async function pairAgentHost(
  deps: Deps,
  raw: unknown,
): Promise<{ hostId: string; publicKey: string }> {
  const input = asControlPlaneError(() => AgentHostPairInput.parse(raw));
  const hostId = deps.ids('agh');
  const now = deps.clock();
  return withTx(deps.db, async (tx) => {
    // The token row is claimed by this UPDATE: a second redemption (even a concurrent one) finds it used.
    const claimed = await tx
      .updateTable('runner_pairing_tokens')
      .set({ used_at: now, runner_id: hostId })
      .where('token_hash', '=', sha256(input.token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['tenant_id'])
      .executeTakeFirst();
    if (!claimed)
      throw new ControlPlaneError('invalid_pairing_token', 'the pairing token is unknown, used or expired');
    await tx
      .insertInto('agent_hosts')
      .values({
        id: hostId,
        tenant_id: claimed.tenant_id,
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

/** The paired host a lease holder name is, or null (an unpaired holder: the control plane seals for it). */
export async function agentHostOf(ex: Executor, holder: string): Promise<AgentHost | null> {
  const row = await ex
    .selectFrom('agent_hosts')
    .select(['id', 'tenant_id', 'name', 'public_key', 'state'])
    .where('id', '=', holder)
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    publicKey: row.public_key,
    state: row.state,
  };
}

/** Every agent host's public key, for GET /keys (revoked ones with `revokedAt`: old records still verify). */
export async function agentHostKeys(ex: Executor): Promise<PublicKeyEntry[]> {
  const rows = await ex
    .selectFrom('agent_hosts')
    .select(['id', 'name', 'public_key', 'revoked_at'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    kind: 'agent-host' as const,
    id: r.id,
    name: r.name,
    key: r.public_key,
    ...(r.revoked_at ? { revokedAt: iso(r.revoked_at)! } : {}),
  }));
}
