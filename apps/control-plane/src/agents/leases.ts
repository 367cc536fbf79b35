// Agent turn leases, on THE lease rule (src/leases/, table run_leases, epoch = the run's attempt), as a
// runner leases runs: a queued turn is claimed in the admission kernel's WFQ order and started with its
// lease in one statement (claimAndStart, kind `agent`); a parked turn whose every dispatched call has its
// result is READY and is leased where it lies (awaiting_input: attempt + 1 = the new epoch) — the holder's
// `resumed` report un-parks it. Heartbeats extend; an expired lease on a running turn is requeued by the
// sweep, on a parked one counted as a lost resume (the turn stays ready for the next holder); every report
// and call carries the epoch, and a stale one is 409 `stale_lease` that changes nothing. A holder that cannot
// resume a parked turn declines it (declines.ts): released at once, not offered to that holder again while it
// presents the same capability set.
// Ready parks are offered oldest-READY first: ready since the park (`updated_at`) or since its last lost
// resume (`resume_lost_at`, leases/sweep.ts), whichever is later — a turn whose resume crashed its host goes
// behind the parks that were waiting meanwhile, instead of being offered first again.
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import { retryOnConflict, type Tx } from '../db/tx.js';
import { isControlPlaneError } from '../errors.js';
import type { LeasePolicy } from '../leases/policy.js';
import { assertCurrentEpoch, leaseUpsert, release, renewLive } from '../leases/store.js';
import { type RunRow, selectRunRows } from '../ledger/runs.js';
import { claimAndStart } from '../scheduler/claim-start.js';
import type { Deps } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { type AgentHost, admitHolder, type HolderPolicy } from './hosts.js';
import type { TurnLeaseView } from './schemas.js';
import { turnLeaseOf, WAITING_CALL } from './turns.js';

/**
 * Parked turns with nothing left to wait for, no live lease and no decline by `holder` under the capability
 * set it presents now (`caps`, agents/declines.ts: it said it cannot resume them), oldest-ready first, locked,
 * leased to `holder` (of `tenant` only, if named).
 */
async function leaseReadyParks(
  tx: Tx,
  holder: string,
  caps: string | null,
  n: number,
  nowMs: number,
  leaseMs: number,
  tenant: string | null,
) {
  if (n <= 0) return [];
  const ofTenant = tenant === null ? sql`` : sql`AND r.tenant_id = ${tenant}`;
  const { rows } = await sql<{ run_id: string; tenant: string; epoch: string | number }>`
    WITH ready AS MATERIALIZED (
      SELECT r.id FROM runs r
      WHERE r.kind = 'agent' AND r.status = 'awaiting_input' ${ofTenant}
        AND NOT EXISTS (SELECT 1 FROM run_leases l WHERE l.run_id = r.id AND l.expires_at_ms >= ${nowMs}::bigint)
        AND NOT ${WAITING_CALL}
        AND NOT EXISTS (SELECT 1 FROM agent_turn_declines d WHERE d.run_id = r.id AND d.holder = ${holder}
          AND d.capabilities IS NOT DISTINCT FROM ${caps}::text)
      ORDER BY GREATEST(r.updated_at, COALESCE(r.resume_lost_at, r.updated_at)), r.id
      LIMIT ${n}::int
      FOR UPDATE OF r SKIP LOCKED
    ),
    bumped AS (
      UPDATE runs r SET attempt = r.attempt + 1 FROM ready WHERE r.id = ready.id
      RETURNING r.id AS run_id, r.tenant_id AS tenant, r.attempt::bigint AS epoch
    ),
    l AS (${leaseUpsert(sql`SELECT run_id, tenant, epoch FROM bumped`, holder, nowMs, nowMs + leaseMs)})
    SELECT run_id, tenant, epoch FROM l ORDER BY run_id`.execute(tx);
  return rows.map((r) => ({ runId: r.run_id, epoch: numeric(r.epoch) }));
}

/**
 * Up to `free` turns for `holder`: new ones first (WFQ order), then ready parks. `caps`: the digest of the
 * capability set the holder presents (capabilityKey; null: none declared).
 */
export async function grantTurnLeases(
  deps: Deps,
  policy: LeasePolicy,
  holder: string,
  free: number,
  holders: HolderPolicy,
  caps: string | null = null,
): Promise<TurnLeaseView[]> {
  return retryOnConflict(() =>
    deps.db.transaction().execute(async (tx) => {
      const now = deps.clock();
      // A paired agent host (agents/hosts.ts) is offered only what it may sign for: its tenant's turns (a
      // tenant-scoped host); a revoked one (or an unpaired holder under `requirePaired`) is refused: 401.
      const host = await admitHolder(tx, holder, holders);
      if (free <= 0) return [];
      const tenant = host?.tenantId ?? null;
      const started = await claimAndStart(
        tx,
        free,
        now,
        ['agent'],
        { holder, leaseMs: policy.leaseMs },
        tenant === null ? {} : { tenant },
      );
      const parks = await leaseReadyParks(
        tx,
        holder,
        caps,
        free - started.length,
        now.getTime(),
        policy.leaseMs,
        tenant,
      );
      const granted = [...started.map((s) => ({ runId: s.runId, epoch: s.epoch })), ...parks];
      if (granted.length === 0) return [];
      const rows: RunRow[] = await selectRunRows(tx)
        .selectAll()
        .where(
          'id',
          'in',
          granted.map((g) => g.runId),
        )
        .execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      const out: TurnLeaseView[] = [];
      for (const g of granted) {
        const row = byId.get(g.runId);
        if (!row) continue;
        try {
          out.push(await turnLeaseOf(tx, row, g.epoch, policy));
        } catch (e) {
          if (!isControlPlaneError(e) || e.code !== 'not_found') throw e;
          // An agent run naming no registered agent (version) can never run here: it fails, once.
          await transitionTx(tx, deps, row.tenant_id, row.id, {
            type: 'fail',
            error: { code: 'agent_not_found', message: e.message },
          });
          await release(tx, row.id, g.epoch);
        }
      }
      return out;
    }),
  );
}

/** Extend the leases `holder` still holds; `lost` lists the others and turns no longer live (settled). */
export async function heartbeatTurns(
  deps: Deps,
  policy: LeasePolicy,
  holder: string,
  held: readonly { runId: string; epoch: number }[],
  holders: HolderPolicy,
): Promise<{ lost: string[] }> {
  await admitHolder(deps.db, holder, holders);
  if (held.length === 0) return { lost: [] };
  const now = deps.clock().getTime();
  return { lost: await renewLive(deps.db, holder, held, now, policy.leaseMs, ['running', 'awaiting_input']) };
}

/**
 * 401 `invalid_agent_host` unless `holders` admits `holder` (hosts.ts `admitHolder`), then 409 `stale_lease`
 * unless it holds the turn's lease at `epoch` (call after locking the run): the paired host, or null.
 */
export async function assertTurnLease(
  tx: Tx,
  runId: string,
  epoch: number,
  holder: string,
  holders: HolderPolicy,
): Promise<AgentHost | null> {
  const host = await admitHolder(tx, holder, holders);
  await assertCurrentEpoch(tx, runId, epoch, holder);
  return host;
}
