// Lanes: extensions beyond the AdmissionStore interface that the control plane needs (same atomic steps).
// The dispatch lane's claim is scheduler/claim-start.ts: it claims AND starts runs in one statement.
import type { Executor } from '../../db/tx.js';
import { markStarted } from './claim.js';
import { atomically } from './scope.js';

/** Extensions beyond the AdmissionStore interface that the control plane's lanes need. */
export class PgAdmissionLanes {
  constructor(private readonly exec: Executor) {}

  /** A run started elsewhere (the agent service): queued → running now, outside the dispatch order. */
  async startNow(tenant: string, runId: string, now: number): Promise<boolean> {
    return atomically(this.exec, async (tx) => {
      const slot = await tx
        .selectFrom('adm_slots')
        .select(['class', 'status'])
        .where('tenant', '=', tenant)
        .where('run_id', '=', runId)
        .forUpdate()
        .executeTakeFirst();
      if (slot?.status !== 'queued') return false;
      await markStarted(tx, tenant, [{ run_id: runId, class: slot.class }], now);
      return true;
    });
  }
}
