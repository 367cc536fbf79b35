// Less work per run (issue 14): two constraints whose checks guard nothing the writers do not already, and
// one queue index fewer.
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
// 3. `adm_queue` loses adm_queue_order (lane, finish, seq): one entry per run of five. Every claim of the
//    young arm now reads adm_queue_kind_order (kind, lane, finish, seq), one ordered scan per kind merged
//    (admission-store/sql/claim.ts youngHead); a claim of any kind (the store's) finds the queued kinds by a
//    skip scan of the same index. So that no entry escapes it, `kind` becomes NOT NULL (entries from before
//    0004 take their slot's kind, which is NOT NULL; every writer since sets it).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE events DROP CONSTRAINT IF EXISTS events_pkey`.execute(db);
  await sql`ALTER TABLE record_segments DROP CONSTRAINT IF EXISTS record_segments_run_id_fkey`.execute(db);
  await sql`UPDATE adm_queue q SET kind = s.kind FROM adm_slots s
    WHERE q.kind IS NULL AND s.tenant = q.tenant AND s.run_id = q.run_id`.execute(db);
  await sql`ALTER TABLE adm_queue ALTER COLUMN kind SET NOT NULL`.execute(db);
  await sql`DROP INDEX IF EXISTS adm_queue_order`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS adm_queue_order ON adm_queue (lane, finish, seq)`.execute(db);
  await sql`ALTER TABLE adm_queue ALTER COLUMN kind DROP NOT NULL`.execute(db);
  await sql`ALTER TABLE record_segments ADD CONSTRAINT record_segments_run_id_fkey
    FOREIGN KEY (run_id) REFERENCES runs(id)`.execute(db);
  await sql`ALTER TABLE events ADD PRIMARY KEY (id)`.execute(db);
}
