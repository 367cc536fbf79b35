// Waiting on a lock wait, never on a sleep: the race tests on live PostgreSQL pause one side of a race behind a
// row another connection holds, and go on once PostgreSQL reports the wait (pg_stat_activity).
import type pg from 'pg';

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
