// settle: a non-terminal run becomes terminal exactly once (the slot row's lock decides), its queue entry,
// running slot or session slot is freed, and actuals are charged with in-flight released up to the root.
// Lock order as in settle-many.ts: slot → envelope path (by id) → tenant row → global row.
import type { Settlement, SettleResult } from '@everdict/admission';
import { isTerminalStatus as isTerminal, type RunStatus } from '@everdict/run-model';
import { sql } from 'kysely';
import type { Tx } from '../db/tx.js';
import { QUEUED_COLUMN, slotOf } from './rows.js';

export async function settleSlot(tx: Tx, s: Settlement): Promise<SettleResult> {
  const row = await tx
    .selectFrom('adm_slots')
    .selectAll()
    .where('tenant', '=', s.tenant)
    .where('run_id', '=', s.runId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) return { settled: false, reason: 'unknown_run' };
  const slot = slotOf(row);
  if (isTerminal(slot.status)) return { settled: false, reason: 'already_settled' };
  if (s.ifStatus !== undefined && slot.status !== s.ifStatus)
    return { settled: false, reason: 'status_changed' };
  if (slot.status === 'queued' && s.status === 'succeeded') return { settled: false, reason: 'not_started' };
  const from: RunStatus = slot.status;

  await sql`
    WITH RECURSIVE p(id, parent_id, depth) AS (
      SELECT id, parent_id, 0 FROM adm_envelopes WHERE tenant = ${s.tenant} AND id = ${slot.envelopeId}
      UNION ALL
      SELECT e.id, e.parent_id, p.depth + 1 FROM adm_envelopes e JOIN p ON e.tenant = ${s.tenant} AND e.id = p.parent_id
      WHERE p.depth < 64
    ),
    env_lock AS MATERIALIZED (
      SELECT e.id FROM adm_envelopes e JOIN p ON e.tenant = ${s.tenant} AND e.id = p.id ORDER BY e.id FOR UPDATE OF e
    )
    UPDATE adm_envelopes e SET spent_usd = e.spent_usd + ${s.actuals.usd}::float8,
      spent_tokens = e.spent_tokens + ${s.actuals.tokens}::float8, in_flight = GREATEST(e.in_flight - 1, 0)
    FROM env_lock l WHERE e.tenant = ${s.tenant} AND e.id = l.id`.execute(tx);

  if (from === 'queued') {
    await tx.deleteFrom('adm_queue').where('tenant', '=', s.tenant).where('run_id', '=', s.runId).execute();
    const col = sql.ref(QUEUED_COLUMN[slot.class]);
    await sql`UPDATE adm_tenants SET queued = queued - 1, ${col} = ${col} - 1 WHERE tenant = ${s.tenant}`.execute(
      tx,
    );
  } else if (slot.lifetime === 'session') {
    const m = slot.member ? 1 : 0;
    await sql`UPDATE adm_tenants SET sessions = sessions - 1, member_sessions = member_sessions - ${m}::int
      WHERE tenant = ${s.tenant}`.execute(tx);
    await sql`UPDATE adm_global SET sessions = GREATEST(sessions - 1, 0),
      member_sessions = GREATEST(member_sessions - ${m}::int, 0) WHERE id = 1`.execute(tx);
  } else {
    await sql`UPDATE adm_tenants SET running = running - 1 WHERE tenant = ${s.tenant}`.execute(tx);
  }
  await tx
    .updateTable('adm_slots')
    .set({ status: s.status })
    .where('tenant', '=', s.tenant)
    .where('run_id', '=', s.runId)
    .execute();
  return { settled: true, from, slot: { ...slot, status: s.status } };
}
