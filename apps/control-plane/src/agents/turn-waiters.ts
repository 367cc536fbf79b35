// What wakes the agent hosts' turn long-polls (POST /internal/agent/v1/leases with `waitMs`). A turn becomes
// leasable when
// - a turn is created, or a tenant's capacity is released, or the sweep requeues a lost turn: DISPATCH_CHANNEL
//   (an inline-only create's payload says no agent turn is among it, and is slept through);
// - a parked turn's last awaited call resolves by a run or a group settling, or a turn parks with nothing left
//   to wait for: a fact is written, EVENTS_CHANNEL;
// - an approval is answered, a resume is declined (the turn is offered to the other holders) or a resume's
//   lease is lost: TURNS_CHANNEL, NOTIFYed in the transaction that did it (`announceTurnReady`).
// A long-poll looks again at a wake, at most once per `recheckGapMs` (under load a fact is written many times a
// second), and at least every `pollMs` (the fallback for a notification lost, as every listener polls). An idle
// main job so runs one lease transaction per `pollMs` per waiting host, not one per 200 ms.
import { sql } from 'kysely';
import type { LedgerDatabase } from '../db/database.js';
import type { Executor } from '../db/tx.js';
import { EVENTS_CHANNEL } from '../ledger/events.js';
import { DISPATCH_CHANNEL, mayWakeRunners, TURNS_CHANNEL } from '../services/context.js';
import { Waiters } from '../services/waiters.js';

/** In a transaction that made a parked turn ready without writing a fact: the long-polls look at its commit. */
export async function announceTurnReady(ex: Executor): Promise<void> {
  await sql`SELECT pg_notify(${TURNS_CHANNEL}, '')`.execute(ex);
}

export class TurnWaiters extends Waiters {
  #unlisten: Array<() => Promise<void>> = [];

  constructor(private readonly ldb: Pick<LedgerDatabase, 'listen'>) {
    super();
  }

  async start(): Promise<void> {
    this.#unlisten = [
      await this.ldb.listen(DISPATCH_CHANNEL, (payload) => {
        if (mayWakeRunners(payload)) this.wake();
      }),
      await this.ldb.listen(EVENTS_CHANNEL, () => this.wake()),
      await this.ldb.listen(TURNS_CHANNEL, () => this.wake()),
    ];
  }

  async stop(): Promise<void> {
    const all = this.#unlisten;
    this.#unlisten = [];
    for (const u of all) await u();
    this.wake();
  }
}
