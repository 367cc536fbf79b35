// Can a declined parked turn still run anywhere? One rule, applied when a holder declines it (declines.ts)
// and again when a host is revoked (service.ts `revokeHost`: the host set shrank): the turn fails
// `no_compatible_host` (its record closes) when no active paired host that may lease it (its tenant's, or a
// shared one) is left that has not declined it, and no unknown holder may still come — the control plane
// requires paired hosts, or every holder that declined it is a paired host.
// A decline bars its holder only while it presents the capability set it declined under (`capabilityKey`;
// agents/leases.ts): a host whose capabilities changed is offered the turn again — but only a turn that is
// still parked: one failed here is settled.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';
import { lockRun, type RunRow } from '../ledger/runs.js';
import type { Deps } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import type { HolderPolicy } from './hosts.js';

/** The run code of a turn no host can resume. */
export const NO_COMPATIBLE_HOST = 'no_compatible_host';

/** The key a declared capability set is stored and matched by (order and repeats do not matter); null: none. */
export function capabilityKey(caps: readonly string[] | undefined): string | null {
  if (caps === undefined) return null;
  const set = [...new Set(caps)].sort();
  return createHash('sha256').update(JSON.stringify(set)).digest('hex');
}

/** Active paired hosts that may lease `run` (its tenant's, shared) and have not declined it. */
export async function hostsLeft(tx: Tx, run: Pick<RunRow, 'id' | 'tenant_id'>): Promise<number> {
  const row = await tx
    .selectFrom('agent_hosts as h')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('h.state', '=', 'active')
    .where((eb) => eb.or([eb('h.tenant_id', 'is', null), eb('h.tenant_id', '=', run.tenant_id)]))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('agent_turn_declines as d')
            .select('d.holder')
            .whereRef('d.holder', '=', 'h.id')
            .where('d.run_id', '=', run.id),
        ),
      ),
    )
    .executeTakeFirst();
  return numeric(row?.n ?? 0);
}

/** `run` (locked, parked) fails `no_compatible_host`, naming who declined it and why. */
export async function failNoCompatibleHost(
  tx: Tx,
  deps: Deps,
  run: Pick<RunRow, 'id' | 'tenant_id'>,
  declinedBy: readonly string[],
  why: string,
) {
  return transitionTx(tx, deps, run.tenant_id, run.id, {
    type: 'fail',
    error: {
      code: NO_COMPATIBLE_HOST,
      message: `no agent host can resume this turn: declined by ${declinedBy.join(', ')} (${why})`.slice(
        0,
        2000,
      ),
    },
  });
}

/**
 * After a revoke committed: the declined parked turns of `tenant` (null: of every tenant — a shared host's revoke)
 * that no host can resume any more fail `no_compatible_host` (each re-checked under its row lock: still parked,
 * no live lease). Their ids.
 */
export async function failStrandedTurns(
  deps: Deps,
  holders: HolderPolicy,
  tenant: string | null,
  revokedHost: string,
): Promise<string[]> {
  const nowMs = deps.clock().getTime();
  const candidates = await sql<{ id: string; tenant_id: string }>`
    SELECT r.id, r.tenant_id FROM runs r
    WHERE (${tenant}::text IS NULL OR r.tenant_id = ${tenant}) AND r.kind = 'agent' AND r.status = 'awaiting_input'
      AND EXISTS (SELECT 1 FROM agent_turn_declines d WHERE d.run_id = r.id)
    ORDER BY r.id`.execute(deps.db);
  const failed: string[] = [];
  for (const { id, tenant_id } of candidates.rows) {
    const done = await deps.db.transaction().execute(async (tx) => {
      const run = await lockRun(tx, tenant_id, id);
      if (run?.status !== 'awaiting_input') return false;
      const live = await tx
        .selectFrom('run_leases')
        .select('run_id')
        .where('run_id', '=', id)
        .where('expires_at_ms', '>=', nowMs)
        .executeTakeFirst();
      if (live || (await hostsLeft(tx, run)) > 0) return false;
      const decliners = await sql<{ holder: string; paired: boolean }>`
        SELECT d.holder, EXISTS (SELECT 1 FROM agent_hosts h WHERE h.id = d.holder) AS paired
        FROM agent_turn_declines d WHERE d.run_id = ${id} ORDER BY d.declined_at, d.holder`.execute(tx);
      if (decliners.rows.length === 0) return false;
      if (!holders.requirePaired && decliners.rows.some((d) => !d.paired)) return false;
      await failNoCompatibleHost(
        tx,
        deps,
        run,
        decliners.rows.map((d) => d.holder),
        `no active host that has not declined it is left: ${revokedHost} was revoked`,
      );
      return true;
    });
    if (done) failed.push(id);
  }
  return failed;
}
