// Runner administration: the runners lists, drain and revoke — a tenant admin's (its tenant's runners) and the
// operator's (the service token's door, `/internal/runners/*`: the shared ones). Pairing, credentials and keys
// are registry.ts.
import { sql } from 'kysely';
import { RUNNERS_CHANNEL } from '../auth/runner-credentials.js';
import { iso } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import type { Deps } from '../services/context.js';
import type { Principal } from '../services/types.js';
import { leasesHeldBy, type RunnerRow, type RunnerView, requireAdmin } from './registry.js';
import { Capabilities } from './schemas.js';

/**
 * Who administers runners (lists, drains, revokes): a tenant's admin key — its tenant's runners only — or the
 * operator (the service token, `/internal/runners/*`) — the shared runners only. Either is answered 404 for the
 * other's runners: a tenant never touches a shared runner, and the operator's door reaches no tenant's runner.
 */
export type RunnerAdmin = Principal | typeof OPERATOR;
/** The operator: the service token's door (`/internal/runners/*`), which administers the shared runners. */
export const OPERATOR = 'operator' as const;

/** Who acted, as the runner's row records it: the API key's id (`actor`), or `operator` (the service token). */
export const actorOf = (who: RunnerAdmin): string => (who === OPERATOR ? OPERATOR : who.actor);

/** Every replica forgets the runner's credential at this transaction's commit (RUNNERS_CHANNEL). */
async function announceChange(tx: Tx, credentialHash: string): Promise<void> {
  await sql`SELECT pg_notify(${RUNNERS_CHANNEL}, ${credentialHash})`.execute(tx);
}

/**
 * The runners a principal may see: its tenant's, and the shared ones (marked `shared`). The operator sees the
 * shared ones only (the runners it administers).
 */
export async function listRunners(deps: Deps, who: RunnerAdmin): Promise<RunnerView[]> {
  const rows = await deps.db
    .selectFrom('runners')
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
    deps.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    shared: r.tenant_id === null,
    tenantId: r.tenant_id,
    capabilities: Capabilities.parse(r.capabilities),
    state: r.state,
    publicKey: r.public_key,
    createdAt: iso(r.created_at)!,
    lastHeartbeatAt: iso(r.last_heartbeat_at),
    revokedAt: iso(r.revoked_at),
    drainedAt: iso(r.drained_at),
    drainedBy: r.drained_by,
    revokedBy: r.revoked_by,
    leasesHeld: counts.get(r.id) ?? 0,
  }));
}

/**
 * A runner `who` may administer, locked: a tenant admin's own tenant's, the operator's shared ones (a tenant's
 * runner is its admins': 404 at the operator's door). A shared runner asked of a tenant admin is 403 naming the
 * operator's door: the tenant's `GET /runners` lists it (it may take the tenant's runs), so "not found" would
 * contradict that list; another tenant's runner is 404, as everything of another tenant is.
 */
async function lockOwnRunner(
  tx: Tx,
  who: RunnerAdmin,
  runnerId: string,
  action: 'drain' | 'revoke',
): Promise<RunnerRow> {
  if (who !== OPERATOR) requireAdmin(who);
  const row = await tx
    .selectFrom('runners')
    .selectAll()
    .where('id', '=', runnerId)
    .where((eb) =>
      who === OPERATOR
        ? eb('tenant_id', 'is', null)
        : eb.or([eb('tenant_id', '=', who.tenantId), eb('tenant_id', 'is', null)]),
    )
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw notFound('runner', runnerId);
  if (who !== OPERATOR && row.tenant_id === null)
    throw new ControlPlaneError(
      'forbidden',
      `runner ${runnerId} is shared (it may take every tenant's runs): the operator ${action}s it, at POST /internal/runners/${runnerId}/${action} with the service token`,
      { id: runnerId, reason: 'shared_runner' },
    );
  return row as RunnerRow;
}

/**
 * No new leases (nor placements: its rows leave the placement index); current ones finish. Idempotent; a revoked
 * runner stays revoked (409, nothing recorded). The drain is recorded on the runner's row — who (`actorOf`) and
 * when (`drained_by`, `drained_at`; GET /runners lists them) — once, by the drain that moved it from active (a
 * drain of a draining runner changes nothing, so records nothing). Answers the credential hash, for the caller to
 * evict from its replica's cache (the others hear RUNNERS_CHANNEL).
 */
export async function drainRunner(deps: Deps, who: RunnerAdmin, runnerId: string): Promise<string> {
  return withTx(deps.db, async (tx) => {
    const row = await lockOwnRunner(tx, who, runnerId, 'drain');
    if (row.state === 'revoked') throw new ControlPlaneError('conflict', `runner ${runnerId} is revoked`);
    if (row.state === 'active')
      await tx
        .updateTable('runners')
        .set({ state: 'draining', drained_at: deps.clock(), drained_by: actorOf(who) })
        .where('id', '=', runnerId)
        .execute();
    // It takes no new runs, so it leaves the placement index: a run only it could take is 422 `no_placement`
    // at the create door rather than admitted to wait queued for a runner that will never lease it.
    await tx.deleteFrom('runner_images').where('runner_id', '=', runnerId).execute();
    await announceChange(tx, row.credential_hash);
    return row.credential_hash;
  });
}

/**
 * Revoke: recorded on the runner's row (`revoked_by`: `actorOf`, with `revoked_at`); the credential stops working at once, the runner leaves the placement index, and `expire` (the
 * lease rule) expires every lease it holds in the same transaction (the caller then sweeps: they requeue).
 * The runner's row is locked FOR UPDATE first (`lockOwnRunner`; keep it so): a completion holds it FOR KEY SHARE
 * (completion-rows.ts), so a completion in flight settles before the revoke reads the leases, or reads them
 * revoked after it — never settles on a lease it read before the revoke committed.
 * Its session channel row goes too: no replica relays to it any more, and the sessions it holds open are lost
 * to every replica's sweep once the replica holding the channel has closed it (sessions/hub.ts `revoked`).
 * Every replica forgets the credential at the commit (RUNNERS_CHANNEL); the caller evicts it from its own
 * cache with the answered `credentialHash` (the NOTIFY may come later).
 */
export async function revokeRunner(
  deps: Deps,
  who: RunnerAdmin,
  runnerId: string,
  expire: (tx: Tx, runnerId: string) => Promise<string[]>,
): Promise<{ expired: string[]; credentialHash: string }> {
  return withTx(deps.db, async (tx) => {
    const row = await lockOwnRunner(tx, who, runnerId, 'revoke');
    if (row.state === 'revoked') return { expired: [], credentialHash: row.credential_hash };
    await tx
      .updateTable('runners')
      .set({ state: 'revoked', revoked_at: deps.clock(), revoked_by: actorOf(who) })
      .where('id', '=', runnerId)
      .execute();
    await tx.deleteFrom('runner_images').where('runner_id', '=', runnerId).execute();
    await tx.deleteFrom('session_channels').where('runner_id', '=', runnerId).execute();
    await announceChange(tx, row.credential_hash);
    return { expired: await expire(tx, runnerId), credentialHash: row.credential_hash };
  });
}
