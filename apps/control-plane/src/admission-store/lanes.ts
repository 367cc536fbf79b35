// Lanes: extensions beyond the AdmissionStore interface that the control plane needs (same atomic steps).
// The dispatch lane's claim is scheduler/claim-start.ts: it claims AND starts runs in one statement.
import { sql } from 'kysely';
import type { Executor } from '../db/tx.js';
import { QUEUED_COLUMN } from './rows.js';
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
      await tx.deleteFrom('adm_queue').where('tenant', '=', tenant).where('run_id', '=', runId).execute();
      await tx
        .updateTable('adm_slots')
        .set({ status: 'running', started_at: now })
        .where('tenant', '=', tenant)
        .where('run_id', '=', runId)
        .execute();
      const col = sql.ref(QUEUED_COLUMN[slot.class as keyof typeof QUEUED_COLUMN]);
      await sql`UPDATE adm_tenants SET queued = queued - 1, ${col} = ${col} - 1, running = running + 1 WHERE tenant = ${tenant}`.execute(
        tx,
      );
      return true;
    });
  }
}
