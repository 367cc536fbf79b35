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

/** Facts read from the outbox at a time by a live feed (and what a paused consumer may hold past its mark). */
export const FEED_PAGE = 500;

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
      // The consumer's back-pressure: `onEvent` answering false stops the reading right after that event (the
      // rest stays in the outbox, `after` where it was delivered) until `resume()` — a slow SSE client holds
      // one page of facts at most, not every fact of a busy tenant.
      let paused = false;
      const drain = async (): Promise<void> => {
        do {
          again = false;
          for (;;) {
            const batch = await listEvents(deps.db, p.tenantId, {
              after,
              runId: opts.runId,
              kind: opts.kind,
              limit: FEED_PAGE,
            });
            for (const e of batch) {
              if (closed) return;
              after = e.id;
              if (onEvent(e) === false) {
                paused = true;
                return;
              }
            }
            if (batch.length < FEED_PAGE) break;
          }
        } while (again && !closed);
      };
      const wake = (): void => {
        if (closed || paused) return;
        if (running) {
          again = true;
          return;
        }
        running = drain()
          .catch((e: unknown) => deps.log('warn', 'event feed read failed', { error: String(e) }))
          .finally(() => {
            running = null;
            // A wake (or a resume) that came while a drain was stopping (paused, or past its last loop).
            if (again) wake();
          });
      };
      const unlisten = await deps.ldb.listen(EVENTS_CHANNEL, wake);
      const timer = setInterval(wake, pollMs);
      timer.unref?.();
      wake();
      return {
        resume() {
          if (!paused) return;
          paused = false;
          wake();
        },
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
