// What the console reads that no service exposes: the tenant's envelopes (spent against caps, in flight)
// and its admission queue (queued and running by class, caps). Read-only, tenant-scoped queries.

import type { Core } from '../core.js';
import { numeric as num } from '../db/numeric.js';

export interface EnvelopeView {
  id: string;
  parentId: string | null;
  /** The run that opened it (the one whose create carried `envelope`), when there is one. */
  openedBy: string | null;
  caps: { usd: number | null; tokens: number | null; runs: number | null; inFlight: number };
  spent: { usd: number; tokens: number; runs: number };
  inFlight: number;
}

export interface QueueView {
  queued: { total: number; interactive: number; background: number; batch: number };
  running: number;
  sessions: number;
  caps: { maxQueued: number; maxConcurrent: number };
  /** Queued entries by kind (from the queue itself). */
  queuedByKind: Record<string, number>;
}

export interface ConsoleSource {
  envelopes(tenantId: string, limit: number): Promise<EnvelopeView[]>;
  queue(tenantId: string): Promise<QueueView>;
}

export function consoleSource(core: Pick<Core, 'internals'>): ConsoleSource {
  const db = core.internals.deps.db;
  return {
    async envelopes(tenantId, limit) {
      const rows = await db
        .selectFrom('adm_envelopes_now')
        .selectAll()
        .where('tenant', '=', tenantId)
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      // A delegated envelope is opened by the first run created in it (its root); a tenant's root has none.
      const ids = rows.filter((r) => r.parent_id !== null).map((r) => r.id);
      const openers =
        ids.length === 0
          ? []
          : await db
              .selectFrom('runs')
              .select(['envelope_id', (eb) => eb.fn.min('id').as('id')])
              .where('tenant_id', '=', tenantId)
              .where('envelope_id', 'in', ids)
              .groupBy('envelope_id')
              .execute();
      const openedBy = new Map(openers.map((o) => [o.envelope_id, o.id]));
      return rows.map((r) => ({
        id: r.id,
        parentId: r.parent_id,
        openedBy: openedBy.get(r.id) ?? null,
        caps: {
          usd: r.cap_usd === null ? null : num(r.cap_usd),
          tokens: r.cap_tokens === null ? null : num(r.cap_tokens),
          runs: r.cap_runs === null ? null : num(r.cap_runs),
          inFlight: num(r.in_flight_cap),
        },
        spent: { usd: num(r.spent_usd), tokens: num(r.spent_tokens), runs: num(r.spent_runs) },
        inFlight: num(r.in_flight),
      }));
    },
    async queue(tenantId) {
      const t = await db
        .selectFrom('adm_tenants_now')
        .selectAll()
        .where('tenant', '=', tenantId)
        .executeTakeFirst();
      const byKind = await db
        .selectFrom('adm_queue')
        .select(['kind', (eb) => eb.fn.countAll().as('n')])
        .where('tenant', '=', tenantId)
        .groupBy('kind')
        .execute();
      return {
        queued: {
          total: num(t?.queued ?? 0),
          interactive: num(t?.queued_interactive ?? 0),
          background: num(t?.queued_background ?? 0),
          batch: num(t?.queued_batch ?? 0),
        },
        running: num(t?.running ?? 0),
        sessions: num(t?.sessions ?? 0),
        caps: { maxQueued: num(t?.max_queued ?? 0), maxConcurrent: num(t?.max_concurrent ?? 0) },
        queuedByKind: Object.fromEntries(byKind.map((r) => [r.kind ?? 'unknown', num(r.n)])),
      };
    },
  };
}
