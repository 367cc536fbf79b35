// The live feed's two cursors (events-feed.ts `subscribe`). The id cursor reads a tenant's facts as they become
// visible, in outbox-id order: a fact shows as soon as its transaction commits. But ids are taken at insert and
// transactions commit in any order (PostgreSQL, concurrent writers), so a fact whose transaction commits after a
// higher id was read lies behind the id cursor for ever. The settled cursor follows in the gap-free (tx, id)
// order the subscriptions use — facts whose transactions are all below the oldest one running — and every fact
// it passes that the id cursor did not deliver is delivered then: late and out of id order, never lost.
import type { OutboxPosition } from '../ledger/events.js';

/** A fact's place in both orders. */
export interface FeedPlace {
  readonly tx: bigint;
  readonly id: bigint;
}

/** The transactions visible when the feed started (`pg_current_snapshot()`: below xmin, or below xmax and not running). */
export interface StartSnapshot {
  readonly xmin: bigint;
  readonly xmax: bigint;
  readonly running: ReadonlySet<bigint>;
}

const MAX_ID = 9_223_372_036_854_775_807n;

export class FeedCursors {
  #after: bigint;
  readonly #start: bigint;
  #settled: FeedPlace;
  /** Facts the id cursor delivered that the settled cursor has not passed yet. */
  readonly #delivered = new Set<bigint>();
  readonly #snapshot: StartSnapshot;

  /** From id `after`, the snapshot the feed started in (`after` read in it, when the caller gave none). */
  constructor(after: bigint, snapshot: StartSnapshot) {
    this.#after = after;
    this.#start = after;
    this.#snapshot = snapshot;
    // Everything below the start's xmin was visible then: the settled cursor starts past it.
    this.#settled = { tx: snapshot.xmin - 1n, id: MAX_ID };
  }

  /** The id cursor (what a client resumes after). */
  get after(): string {
    return String(this.#after);
  }

  get settled(): OutboxPosition {
    return { tx: String(this.#settled.tx), id: String(this.#settled.id) };
  }

  /** The id cursor read (and delivers) `fact`. */
  read(fact: FeedPlace): void {
    this.#after = fact.id;
    if (!this.#passed(fact)) this.#delivered.add(fact.id);
  }

  /** The settled cursor passed `fact`: true when it was not delivered and must be now. */
  settle(fact: FeedPlace): boolean {
    this.#settled = fact;
    if (this.#delivered.delete(fact.id)) return false;
    if (fact.id > this.#after) return false; // ahead of the id cursor: it reads it (already passed, then)
    if (fact.id > this.#start) return true; // behind the id cursor, never read: committed late
    return !this.#visibleAtStart(fact.tx); // below the start, committed after it: new to this feed
  }

  /** Facts delivered and not settled yet (for tests and logs). */
  get pending(): number {
    return this.#delivered.size;
  }

  #passed(f: FeedPlace): boolean {
    return f.tx < this.#settled.tx || (f.tx === this.#settled.tx && f.id <= this.#settled.id);
  }

  #visibleAtStart(tx: bigint): boolean {
    const s = this.#snapshot;
    return tx < s.xmin || (tx < s.xmax && !s.running.has(tx));
  }
}
