// Queue depth per tenant and class, from the ledger's admission rows (the counters the gate keeps under
// the same transactions that enqueue and claim), so every replica reports the same figure.
import type { Db } from '../db/tx.js';

export interface QueueDepthRow {
  tenant: string;
  class: string;
  depth: number;
}

export async function queueDepth(db: Db): Promise<QueueDepthRow[]> {
  const rows = await db
    .selectFrom('adm_tenants')
    .select(['tenant', 'queued_interactive', 'queued_background', 'queued_batch'])
    .orderBy('tenant')
    .execute();
  return rows.flatMap((r) => [
    { tenant: r.tenant, class: 'interactive', depth: r.queued_interactive },
    { tenant: r.tenant, class: 'background', depth: r.queued_background },
    { tenant: r.tenant, class: 'batch', depth: r.queued_batch },
  ]);
}
