// Tenant events from the outbox, and a live feed woken by NOTIFY with a poll fallback.
import {
  EVENTS_CHANNEL,
  feedStart,
  listEvents,
  type PlacedEvent,
  readAfterId,
  readSettledOf,
} from '../ledger/events.js';
import type { EventFeed } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { FeedCursors } from './feed-cursors.js';
import { EventPosition } from './types.js';

/** A caller's `after`: an outbox position within bigint (400 `out_of_range` beyond), or undefined. */
export function eventPosition(after: string | undefined): string | undefined {
  return after === undefined
    ? undefined
    : asControlPlaneError(() => EventPosition.parse(after), { at: ['after'] });
}

/** Facts read from the outbox at a time by a live feed (and what a paused consumer may hold past its mark). */
export const FEED_PAGE = 500;

/** How often, at most, a live feed's settled cursor reads (a fact committed late arrives within this and a poll). */
export const SETTLED_READ_MS = 500;

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
      // The start's snapshot and, when the caller gave no position, the tenant's last fact in it: the feed
      // answers what commits after this (feed-cursors.ts: the id cursor, and the settled one behind it that
      // delivers a fact committed after a higher id was read).
      const start = await feedStart(deps.db, p.tenantId);
      const cursors = new FeedCursors(BigInt(eventPosition(opts.after) ?? start.maxId), start.snapshot);
      const filter = { runId: opts.runId, kind: opts.kind };
      let closed = false;
      let running: Promise<void> | null = null;
      let again = false;
      // The consumer's back-pressure: `onEvent` answering false stops the reading right after that event (the
      // rest stays in the outbox, the cursors where it was delivered) until `resume()` — a slow SSE client holds
      // one page of facts at most, not every fact of a busy tenant.
      let paused = false;
      let settledReadAt = Number.NEGATIVE_INFINITY;
      /** Delivers each fact `take` keeps; false when the consumer paused the feed (or it closed) on the way. */
      const pass = async (
        read: () => Promise<PlacedEvent[]>,
        take: (f: PlacedEvent) => boolean,
      ): Promise<boolean> => {
        for (;;) {
          const batch = await read();
          for (const f of batch) {
            if (closed) return false;
            if (take(f) && onEvent(f.event) === false) {
              paused = true;
              return false;
            }
          }
          if (batch.length < FEED_PAGE) return true;
        }
      };
      const drain = async (): Promise<void> => {
        do {
          again = false;
          const live = await pass(
            () => readAfterId(deps.db, p.tenantId, cursors.after, filter, FEED_PAGE),
            (f) => {
              cursors.read(f);
              return true;
            },
          );
          if (!live) return;
          // The settled cursor only finds a fact committed late, which is rare: it reads at most every
          // SETTLED_READ_MS (the poll's wake runs it too), not on every NOTIFY of a busy tenant.
          if (performance.now() - settledReadAt < SETTLED_READ_MS) continue;
          settledReadAt = performance.now();
          const settled = await pass(
            () => readSettledOf(deps.db, p.tenantId, cursors.settled, filter, FEED_PAGE),
            (f) => cursors.settle(f),
          );
          if (!settled) return;
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
