// Single writer per run trajectory. Appends and the seal of one run's trajectory are serialized:
// in-process by a keyed promise chain, and across replicas (PostgreSQL) by a transaction-scoped advisory
// lock on the run — held while the objects are written, released by COMMIT/ROLLBACK even if this process
// dies. PGlite is one process's database, so the in-process chain is the whole story there.
import { sql } from 'kysely';
import type { LedgerDatabase } from '../db/database.js';
import type { Executor } from '../db/tx.js';

/** The advisory lock space of run trajectories (first key of the two-int lock). */
const LOCK_SPACE = 0x7472616a; // 'traj'

export class RunLocks {
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(private readonly ldb: LedgerDatabase) {}

  /** Runs `fn` as the only writer of (tenant, runId)'s trajectory; `ex` reads the ledger inside the lock. */
  run<T>(tenant: string, runId: string, fn: (ex: Executor) => Promise<T>): Promise<T> {
    const key = `${tenant}\u0000${runId}`;
    const prior = this.#chains.get(key) ?? Promise.resolve();
    const next = prior.then(
      () => this.#locked(key, fn),
      () => this.#locked(key, fn),
    );
    const tail = next.catch(() => undefined);
    this.#chains.set(key, tail);
    void tail.then(() => {
      if (this.#chains.get(key) === tail) this.#chains.delete(key);
    });
    return next;
  }

  async #locked<T>(key: string, fn: (ex: Executor) => Promise<T>): Promise<T> {
    if (this.ldb.dialect === 'pglite') return fn(this.ldb.db);
    return this.ldb.db.transaction().execute(async (tx) => {
      // The in-process key holds U+0000, which PostgreSQL text refuses: the lock hashes a JSON pair instead.
      const lockKey = JSON.stringify(key.split('\u0000'));
      await sql`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, hashtext(${lockKey}))`.execute(tx);
      return fn(tx);
    });
  }
}
