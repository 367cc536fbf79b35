// The artifact sweep's two halves in the ledger: the rule that says which stored artifacts a run still needs, and
// the lock that makes "is it needed? then delete it" one step against an upload placing the same address.
//
// Artifacts are content-addressed and shared within a tenant. An address is needed while any run of the tenant
// lists it in `runner_artifacts` and either has not ended (its current attempt may still claim it) or ended
// claiming it: the row is of the attempt that settled it (`runs.attempt`) and its outputs list the address —
// exactly what `GET /runs/:id/artifact` serves (service.ts). What else stays behind: uploads of attempts that
// were lost or killed, and uploads a runner chose not to claim.
import { TERMINAL_STATUSES } from '@everdict/run-model';
import { type Digest, type ObjectBackend, sweepArtifacts } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import type { Executor, Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';

/** The advisory lock space of artifact addresses (first key of the two-int lock). */
const ARTIFACT_LOCK_SPACE = 0x61727466; // 'artf'

/**
 * Holds (tenant, address) until the transaction ends. The upload that places an address and lists it, and the
 * sweep's check and deletion, each run under it: one sees the other's work whole. (On PGlite a transaction holds
 * the one connection, so the lock is a formality there; on PostgreSQL it orders replicas.)
 */
export async function lockArtifactAddress(tx: Tx, tenant: string, address: string): Promise<void> {
  await lockArtifactAddresses(tx, tenant, [address]);
}

/**
 * `lockArtifactAddress` for several addresses in one statement, taken in address order (the array's, sorted
 * here, read in its ordinality), so two transactions locking overlapping sets never wait on each other in a cycle.
 */
export async function lockArtifactAddresses(
  tx: Tx,
  tenant: string,
  addresses: readonly string[],
): Promise<void> {
  const keys = [...new Set(addresses)].sort().map((address) => JSON.stringify([tenant, address]));
  await sql`SELECT pg_advisory_xact_lock(${ARTIFACT_LOCK_SPACE}, hashtext(k))
              FROM unnest(${keys}::text[]) WITH ORDINALITY AS t(k, n) ORDER BY n`.execute(tx);
}

/** Whether any run of `tenant` still needs the artifact at `address` (the rule above). */
export async function artifactNeeded(ex: Executor, tenant: string, address: string): Promise<boolean> {
  const r = await sql<{ needed: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM runner_artifacts a JOIN runs r ON r.id = a.run_id
       WHERE a.address = ${address} AND r.tenant_id = ${tenant}
         AND (r.status <> ALL(${[...TERMINAL_STATUSES]})
              OR (a.epoch = r.attempt
                  AND r.outputs -> 'artifacts' @> jsonb_build_array(jsonb_build_object('uri', 'artifact:' || a.address))))
    ) AS needed`.execute(ex);
  return r.rows[0]?.needed === true;
}

export interface ArtifactSweepPass {
  readonly tenant: string;
  readonly deleted: Digest[];
  readonly kept: number;
  readonly uploadsDeleted: number;
}

/** One sweep of one tenant's artifacts: each address decided and deleted under its lock. */
export async function sweepTenantArtifacts(
  db: Parameters<typeof withTx>[0],
  backend: ObjectBackend,
  tenant: string,
  now: Date,
): Promise<ArtifactSweepPass> {
  const r = await sweepArtifacts<Tx>(backend, tenant, {
    now,
    exclusive: (address, fn) =>
      withTx(db, async (tx) => {
        await lockArtifactAddress(tx, tenant, address);
        return fn(tx);
      }),
    isReferenced: (address, tx) => artifactNeeded(tx, tenant, address),
  });
  return { tenant, ...r };
}
