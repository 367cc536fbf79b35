// The runner's events live in the run's trajectory only (the trajectory store): `runner_events`, which held
// a second copy per epoch, is dropped. What stays in the ledger is where each interval's journal sits in the
// trajectory — `runner_journals`: one row per (run, lease epoch), its first seq and how many events it
// appended — so a completion's journal root is recomputed from the trajectory itself, and the next attempt's
// events continue the trajectory (its lease's `seqFrom`) instead of colliding with a killed attempt's.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE runner_journals (
    run_id text NOT NULL,
    epoch integer NOT NULL,
    seq_from integer NOT NULL,
    event_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, epoch))`.execute(db);
  await sql`DROP TABLE runner_events`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE runner_events (
    run_id text NOT NULL,
    epoch integer NOT NULL,
    seq integer NOT NULL,
    event jsonb NOT NULL,
    PRIMARY KEY (run_id, epoch, seq))`.execute(db);
  await sql`DROP TABLE runner_journals`.execute(db);
}
