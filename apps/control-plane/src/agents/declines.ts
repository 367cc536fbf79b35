// A holder declines a parked turn it leased but cannot resume (POST /internal/agent/v1/runs/:id/decline):
// the record refuses its manifest (`manifest_mismatch`: another agent protocol or configuration than the
// park's) or the stored transcript is not the parked snapshot (`snapshot_mismatch`). Before, it could only
// let the lease expire: the turn was then ready again and leased again — to the same host — for ever.
//
// One transaction, after the same checks as every leased call (the turn's row, then the holder's — 401
// `invalid_agent_host` for a revoked or, under `requirePaired`, unpaired one — then the lease at `epoch`:
// else 409 `stale_lease`, nothing changed):
//   - the turn must be parked (awaiting_input); a running one has an interval open: 409 `not_parked`;
//   - the decline is saved (agent_turn_declines, one per turn and holder) with the capability set the holder
//     leased it under (`capabilities`, as its lease request declared it; none: a set of its own): this holder
//     is not offered the turn again while it presents that set (agents/leases.ts `leaseReadyParks`) — after
//     its capabilities change it is (what it could not resume, its new build may);
//   - the lease is released; it counts no attempt (only lost executions do: leases/sweep.ts), and the next
//     holder's lease carries the next epoch, as every lease does (epochs only rise);
//   - if no active paired host that may lease the turn (its tenant's or a shared one) is left that has not
//     declined it — and the decliner is a paired host, or the control plane requires paired hosts, so no
//     unknown holder may still come — the turn fails `no_compatible_host` (its record closes); else it is
//     ready again at once for the others (`requeued`). A revoke re-checks this (compatible-hosts.ts).
// A retried decline of the same lease by the same holder answers what the first did and changes nothing.
import { numeric } from '../db/numeric.js';
import { type Tx, withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { assertCurrentEpoch, release } from '../leases/store.js';
import { lockRun, rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import { turnOf } from './calls.js';
import { capabilityKey, failNoCompatibleHost, hostsLeft } from './compatible-hosts.js';
import { type AgentHost, admitHolder, type HolderPolicy } from './hosts.js';
import { DeclineInput } from './schemas.js';
import { announceTurnReady } from './turn-waiters.js';
import { declinesOf } from './turns.js';

export { NO_COMPATIBLE_HOST } from './compatible-hosts.js';

export interface TurnDeclined {
  readonly run: RunView;
  /** `requeued`: ready again for the hosts that have not declined it; `failed`: none is left. */
  readonly outcome: 'requeued' | 'failed';
  readonly reason: DeclineInput['reason'];
  /** The holders that declined the turn so far. */
  readonly declinedBy: string[];
}

const declinersOf = async (tx: Tx, runId: string): Promise<string[]> =>
  (await declinesOf(tx, runId)).map((d) => d.holder);

export function turnDeclines(deps: Deps, holders: HolderPolicy) {
  return {
    async decline(runId: string, raw: unknown): Promise<TurnDeclined> {
      const input = asControlPlaneError(() => DeclineInput.parse(raw));
      return asControlPlaneError(() =>
        withTx(deps.db, async (tx) => {
          const found = await turnOf(tx, runId);
          const run = await lockRun(tx, found.tenant_id, runId);
          if (!run) throw notFound('run', runId);
          const host: AgentHost | null = await admitHolder(tx, input.holder, holders);
          const prior = await tx
            .selectFrom('agent_turn_declines')
            .select(['epoch', 'reason', 'outcome'])
            .where('run_id', '=', runId)
            .where('holder', '=', input.holder)
            .executeTakeFirst();
          if (prior && numeric(prior.epoch) === input.epoch)
            return {
              run: rowToView(run),
              outcome: prior.outcome,
              reason: prior.reason,
              declinedBy: await declinersOf(tx, runId),
            };
          await assertCurrentEpoch(tx, runId, input.epoch, input.holder);
          if (run.status !== 'awaiting_input')
            throw new ControlPlaneError(
              'conflict',
              `turn ${runId} is ${run.status}: only a parked turn's resume is declined (report an open interval failed)`,
              { reason: 'not_parked' },
            );
          const now = deps.clock();
          const row = {
            epoch: input.epoch,
            reason: input.reason,
            message: input.message ?? null,
            outcome: 'requeued' as const,
            declined_at: now,
            capabilities: capabilityKey(input.capabilities),
          };
          await tx
            .insertInto('agent_turn_declines')
            .values({ run_id: runId, holder: input.holder, tenant_id: run.tenant_id, ...row })
            .onConflict((oc) => oc.columns(['run_id', 'holder']).doUpdateSet(row))
            .execute();
          await release(tx, runId, input.epoch);
          // Offered to the other holders: their long-polls look again at the commit.
          await announceTurnReady(tx);
          const declinedBy = await declinersOf(tx, runId);
          const unknownMayCome = host === null && !holders.requirePaired;
          if (unknownMayCome || (await hostsLeft(tx, run)) > 0)
            return {
              run: rowToView((await lockRun(tx, run.tenant_id, runId)) ?? run),
              outcome: 'requeued',
              reason: input.reason,
              declinedBy,
            };
          const failed = await failNoCompatibleHost(
            tx,
            deps,
            run,
            declinedBy,
            `last: ${input.reason}${input.message ? `: ${input.message}` : ''}`,
          );
          await tx
            .updateTable('agent_turn_declines')
            .set({ outcome: 'failed' })
            .where('run_id', '=', runId)
            .where('holder', '=', input.holder)
            .execute();
          return { run: rowToView(failed.row), outcome: 'failed', reason: input.reason, declinedBy };
        }),
      );
    },
  };
}
