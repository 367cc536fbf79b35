// Who else listens: a NOTIFY that no other process can hear need not be sent. Every control-plane process
// opens ONE LISTEN connection (database.ts), named `everdict-listen:<its id>` (application_name). While
// `pg_stat_activity` shows no other such connection on this database, this process is the only listener, and
// its announcements are delivered to its own listeners in memory (database.ts `deliverLocally`) instead of
// NOTIFYed: the after-commit ones of the create batch and the settle (ledger/events.ts `notifyAfterCommit`: no
// statement) and the inline claim's `run.started` (scheduler/claim-start.ts: left out of the statement) — no
// signal to the LISTEN backend, no echo to parse (at one create every 20 ms: two statements and three echoes a
// run; see README, Figures).
//
// Looked again every `checkMs` (1 s), off any request path. A listener that appeared since the last look
// (a replica starting) misses what was announced in memory meanwhile — at most one interval's worth — and its
// poll covers that, as it covers any lost notification (wake-loop.ts: every listener also polls). A look
// older than `staleMs` (the check failed, the timer was held) is not trusted: announcements go out as NOTIFYs
// again until a look succeeds.

import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

/** The application_name prefix of every control-plane LISTEN connection. */
export const LISTENER_PREFIX = 'everdict-listen:';

export interface PresenceOptions {
  /** Between looks (default 1,000 ms). */
  checkMs?: number;
  /** A look older than this is not trusted (default 3 × checkMs). */
  staleMs?: number;
}

export class ListenerPresence {
  readonly #db: Kysely<Database>;
  readonly #own: string;
  readonly #checkMs: number;
  readonly #staleMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** When the last successful look found no other listener (performance.now()), or null. */
  #aloneAt: number | null = null;
  #looking = false;

  constructor(db: Kysely<Database>, ownName: string, options: PresenceOptions = {}) {
    this.#db = db;
    this.#own = ownName;
    this.#checkMs = options.checkMs ?? 1_000;
    this.#staleMs = options.staleMs ?? 3 * this.#checkMs;
  }

  /** Starts looking (idempotent); the first look runs at once. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.look(), this.#checkMs);
    this.#timer.unref?.();
    void this.look();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#aloneAt = null;
  }

  /** No other process listens on this database, as of a recent look. */
  get alone(): boolean {
    return this.#aloneAt !== null && performance.now() - this.#aloneAt <= this.#staleMs;
  }

  /** One look now (the timer's). Never throws: a failed look trusts nothing. */
  async look(): Promise<void> {
    if (this.#looking) return;
    this.#looking = true;
    try {
      const { rows } = await sql<{ others: boolean }>`SELECT EXISTS (
          SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
            AND application_name LIKE ${`${LISTENER_PREFIX}%`} AND application_name <> ${this.#own}
        ) AS others`.execute(this.#db);
      this.#aloneAt = rows[0]?.others === false ? performance.now() : null;
    } catch {
      this.#aloneAt = null;
    } finally {
      this.#looking = false;
    }
  }
}
