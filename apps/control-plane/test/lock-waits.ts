// Waiting on a lock wait, never on a sleep: the race tests on live PostgreSQL pause one side of a race behind a
// row another connection holds, and go on once PostgreSQL reports the wait (pg_stat_activity).
import pg from 'pg';
import { type RunnerApp, runnerApp } from './runner-app.js';

/**
 * Resolves once `n` backends of `watch`'s database (other than `watch` itself) wait on a lock, or `done()`
 * says to stop looking (the side being watched finished without waiting).
 */
export async function lockWaits(
  watch: pg.Client,
  n: number,
  done: () => boolean = () => false,
): Promise<void> {
  for (;;) {
    const { rows } = await watch.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    if (rows[0]!.n >= n || done()) return;
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * The race tests' fixture: a runner app on live PostgreSQL (`runner-app.ts`) and two connections of its own to
 * the same database — `locker` holds the row or lock one side of a race needs next, `watch` sees who waits.
 */
export interface LockRace {
  t: RunnerApp;
  locker: pg.Client;
  watch: pg.Client;
  /** Resolves once `n` backends wait on a lock, or `done()` says to stop looking (`lockWaits`). */
  waiting(n: number, done?: () => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function lockRace(poolSize = 4): Promise<LockRace> {
  const t = await runnerApp(poolSize);
  const locker = new pg.Client({ connectionString: t.database.url });
  const watch = new pg.Client({ connectionString: t.database.url });
  await locker.connect();
  await watch.connect();
  return {
    t,
    locker,
    watch,
    waiting: (n, done) => lockWaits(watch, n, done),
    close: async () => {
      await locker.end();
      await watch.end();
      await t.close();
    },
  };
}
