// The outbox's settled horizon: the oldest transaction that may still commit a fact into THIS database. The
// subscriptions consumer and the feed's settled cursor read facts in (tx, id) order strictly below it, so a
// fact never appears behind a cursor that passed its place.
//
// Transaction ids are the whole server's, and so is `pg_snapshot_xmin(pg_current_snapshot())`: below it alone,
// a long writing transaction in ANY database of the server (another application's, a migration, a stuck
// session) held every subscription and feed here back until it ended. The horizon here is the snapshot's
// oldest running transaction that is not known to run in another database — `pg_stat_activity` (`pg_stat_get_activity`) names the
// database of each backend's running top-level transaction (`backend_xid`, the low 32 bits of the snapshot's
// 64-bit ids) — or, when none is left, the snapshot's xmax. Only a transaction SEEN running in another
// database is passed over, so every doubt holds the horizon where it was:
// - the snapshot is the statement's; pg_stat_activity is read once per transaction, possibly earlier: a
//   transaction it does not list (begun after that read, or ended since) counts as this database's;
// - a backend of no database, a prepared transaction (no backend) or a session whose `backend_xid` this role
//   may not see (NULL) counts as this database's;
// - a listed (xid, database) is that transaction's for its whole life: it cannot commit a fact here.
// On PGlite (one backend) the snapshot runs nothing else, and this is the snapshot's xmax.
import { sql } from 'kysely';

/**
 * A scalar SQL expression (bigint): facts with `tx` below it are settled. The transactions seen running in another
 * database are read once per statement (an uncorrelated, hashed subplan over `pg_stat_get_activity`, the function
 * under the pg_stat_activity view without its joins), not once per running transaction.
 */
export const SETTLED_HORIZON = sql<string>`(SELECT LEAST(
    (pg_snapshot_xmax(s)::text)::bigint,
    (SELECT min((x::text)::bigint) FROM pg_snapshot_xip(s) AS x
      WHERE (((x::text)::bigint) % 4294967296)::text NOT IN (
        SELECT a.backend_xid::text FROM pg_stat_get_activity(NULL) AS a
        WHERE a.backend_xid IS NOT NULL
          AND a.datid IS NOT NULL
          AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))))
  FROM pg_current_snapshot() AS s)`;
