// What a host's revoke did to every turn it held (POST /agents/hosts/:id/revoke). The revoke expires the
// host's leases in its transaction (hosts.ts `revokeAgentHost`); the lease sweep then moves each turn as the
// lease rule says (leases/sweep.ts), and the answer names each one's fate:
//   - `requeued`: it was running; back in the queue for another host (a lost execution, counted);
//   - `parked`: it was parked, leased for its resume; the lost resume is counted and the turn stays parked,
//     ready for another host;
//   - `failed`: its lost execution was its last allowed one (`executor_lost`);
//   - `settled`: it had already ended; its leftover lease was dropped;
//   - `pending`: the sweep could not move it yet (another writer held its row); its lease is ended for good,
//     and the next sweep moves it.
// A background sweep may move some of them between the revoke's commit and this one: their fate is read
// from the run (its status, and the error a sweep's fail writes).
// Then the declined parked turns of the host's tenant are re-checked (compatible-hosts.ts): with this host
// gone, one no host can resume any more fails `no_compatible_host` (`noCompatibleHost`).
import { sql } from 'kysely';
import { type LeasePolicy, LOST_CODE, sweepExpiredLeases } from '../leases/index.js';
import type { Deps } from '../services/context.js';
import { failStrandedTurns } from './compatible-hosts.js';
import type { HolderPolicy } from './hosts.js';

export type RevokedTurnOutcome = 'requeued' | 'parked' | 'failed' | 'settled' | 'pending';

/** A lease the revoke ended: its turn, and the turn's status then. */
export interface ExpiredTurn {
  readonly runId: string;
  readonly status: string;
}

export interface RevokedTurns {
  /** Every turn the host held, with what became of it (and its status now). */
  readonly turns: { runId: string; outcome: RevokedTurnOutcome; status: string }[];
  readonly requeued: string[];
  readonly parked: string[];
  readonly failed: string[];
  /** Declined parked turns of the tenant that no active host can resume now: failed `no_compatible_host`. */
  readonly noCompatibleHost: string[];
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

function fateOf(
  before: string,
  now: { status: string; error_code: string | null; leased: boolean },
): RevokedTurnOutcome {
  if (now.leased) return 'pending';
  if (TERMINAL.has(before)) return 'settled';
  if (now.status === 'failed' && now.error_code === LOST_CODE) return 'failed';
  if (TERMINAL.has(now.status)) return 'settled';
  return before === 'running' ? 'requeued' : 'parked';
}

/** Sweep what the revoke of `hostId` expired and say what became of each turn; then re-check declined turns. */
export async function settleRevokedTurns(
  deps: Deps,
  policy: LeasePolicy,
  holders: HolderPolicy,
  host: { id: string; tenantId: string | null },
  expired: readonly ExpiredTurn[],
): Promise<RevokedTurns> {
  const swept =
    expired.length === 0
      ? { requeued: [], failed: [], parked: [], dropped: 0 }
      : await sweepExpiredLeases(deps, policy, deps.clock().getTime());
  const ids = expired.map((e) => e.runId);
  const { rows } =
    ids.length === 0
      ? { rows: [] }
      : await sql<{ id: string; status: string; error_code: string | null; leased: boolean }>`
          SELECT r.id, r.status, r.error->>'code' AS error_code,
            EXISTS (SELECT 1 FROM run_leases l WHERE l.run_id = r.id AND l.holder = ${host.id}) AS leased
          FROM runs r WHERE r.id = ANY(${ids}::text[])`.execute(deps.db);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const known = (list: readonly string[], id: string) => list.includes(id);
  const turns = expired.map((e) => {
    const now = byId.get(e.runId) ?? { status: e.status, error_code: null, leased: false };
    const outcome: RevokedTurnOutcome = known(swept.requeued, e.runId)
      ? 'requeued'
      : known(swept.failed, e.runId)
        ? 'failed'
        : known(swept.parked, e.runId)
          ? 'parked'
          : fateOf(e.status, now);
    return { runId: e.runId, outcome, status: now.status };
  });
  const of = (o: RevokedTurnOutcome) => turns.filter((t) => t.outcome === o).map((t) => t.runId);
  const noCompatibleHost = await failStrandedTurns(deps, holders, host.tenantId, host.id);
  return { turns, requeued: of('requeued'), parked: of('parked'), failed: of('failed'), noCompatibleHost };
}
