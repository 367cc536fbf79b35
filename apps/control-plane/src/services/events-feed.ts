// Tenant events from the outbox, and a live feed woken by NOTIFY with a poll fallback.
import { EVENTS_CHANNEL, listEvents } from '../ledger/events.js';
import type { EventFeed } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { EventPosition } from './types.js';

/** A caller's `after`: an outbox position within bigint (400 `out_of_range` beyond), or undefined. */
export function eventPosition(after: string | undefined): string | undefined {
  return after === undefined ? undefined : asControlPlaneError(() => EventPosition.parse(after));
}

export function eventFeed(deps: Deps, pollMs = 1000): EventFeed {
  return {
    async list(p, opts = {}) {
      const limit = Math.min(Math.max(opts.limit ?? 100, 1), 1000);
      const items = await listEvents(deps.db, p.tenantId, {
        after: eventPosition(opts.after),
        runId: opts.runId,
        kind: opts.kind,
        limit,
      });
      return { items, nextCursor: items.length === limit ? (items.at(-1)?.id ?? null) : null };
    },
    async subscribe(p, opts, onEvent) {
      let after = eventPosition(opts.after);
      if (after === undefined) {
        const row = await deps.db
          .selectFrom('events')
          .select((eb) => eb.fn.max('id').as('m'))
          .where('tenant_id', '=', p.tenantId)
          .executeTakeFirst();
        after = row?.m == null ? '0' : String(row.m);
      }
      let closed = false;
      let running: Promise<void> | null = null;
      let again = false;
      const drain = async (): Promise<void> => {
        do {
          again = false;
          for (;;) {
            const batch = await listEvents(deps.db, p.tenantId, {
              after,
              runId: opts.runId,
              kind: opts.kind,
              limit: 500,
            });
            for (const e of batch) {
              if (closed) return;
              after = e.id;
              onEvent(e);
            }
            if (batch.length < 500) break;
          }
        } while (again && !closed);
      };
      const wake = (): void => {
        if (closed) return;
        if (running) {
          again = true;
          return;
        }
        running = drain()
          .catch((e: unknown) => deps.log('warn', 'event feed read failed', { error: String(e) }))
          .finally(() => {
            running = null;
          });
      };
      const unlisten = await deps.ldb.listen(EVENTS_CHANNEL, wake);
      const timer = setInterval(wake, pollMs);
      timer.unref?.();
      wake();
      return {
        async close() {
          closed = true;
          clearInterval(timer);
          await unlisten();
          await running;
        },
      };
    },
  };
}
