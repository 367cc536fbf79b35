// Less work per run (issue 14): two constraints whose checks guard nothing the writers do not already.
//
// 1. `events` loses its primary-key index. A run writes ≈ 3 facts, each an entry in four btrees (pkey,
//    events_tenant, events_run, events_tx ≈ 0.9 kB of WAL per run). No query reads events by id alone: a
//    tenant's feed and list walk events_tenant (tenant_id, id), a run's events_run (run_id, id), the outbox
//    events_tx (tx, id); the feed's starting point is the tenant's latest id (events_tenant, backwards). Ids
//    stay unique: one sequence (bigserial) assigns them and nothing else writes the column; nothing
//    references events(id).
// 2. `record_segments.run_id` loses its foreign key to runs. Its check ran per inserted segment (≈ 2 per
//    run: an RI trigger query each) and took a KEY SHARE lock on the run row — a Heap/LOCK WAL record per
//    settle. Both writers append to a run they hold: the batch settle inserts only the segments of runs its
//    own UPDATE kept (joined to its RETURNING), `appendSegments` a run row it read in the transaction that
//    locked it. Runs are never deleted.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE events DROP CONSTRAINT IF EXISTS events_pkey`.execute(db);
  await sql`ALTER TABLE record_segments DROP CONSTRAINT IF EXISTS record_segments_run_id_fkey`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE record_segments ADD CONSTRAINT record_segments_run_id_fkey
    FOREIGN KEY (run_id) REFERENCES runs(id)`.execute(db);
  await sql`ALTER TABLE events ADD PRIMARY KEY (id)`.execute(db);
}
