// The head log's trigger (`record_segments_headlog`, 0016/0024) joins the statement's new segments to `runs` for
// each one's group. A PL/pgSQL statement without parameters is planned once per connection, at its first call,
// and that plan is kept until a relation it reads is invalidated: on a fresh database — `runs` a page or two — the
// planner hashed `runs` by a sequential scan, and kept doing so as it grew. Measured on PGlite (no autovacuum,
// nothing invalidates the plan there): the trigger took 11 of the settle write's 13 ms after 20,000 runs, and the
// settle write grew 0.78 → 1.95 ms a run over 24,000 (control-plane README, Figures, "ninth session"). The
// function now plans with sequential scans, hash and merge joins off: the only plan left is a nested loop over the
// segments probing `runs_pkey` — the batch's own rows, whatever the table's size or the plan's age.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER FUNCTION headlog_pending_segments()
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER FUNCTION headlog_pending_segments()
    RESET enable_seqscan RESET enable_hashjoin RESET enable_mergejoin`.execute(db);
}
