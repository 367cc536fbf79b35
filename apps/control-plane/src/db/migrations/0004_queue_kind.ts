// The queue carries each entry's run kind, so a lane's claim is one ordered scan of adm_queue (no join to
// adm_slots: with young statistics the planner nested-looped that join, O(queue²) per claim).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE adm_queue ADD COLUMN kind text`.execute(db);
  await sql`UPDATE adm_queue q SET kind = s.kind FROM adm_slots s WHERE s.tenant = q.tenant AND s.run_id = q.run_id`.execute(
    db,
  );
  await sql`CREATE INDEX adm_queue_kind_order ON adm_queue (kind, lane, finish, seq)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS adm_queue_kind_order`.execute(db);
  await sql`ALTER TABLE adm_queue DROP COLUMN IF EXISTS kind`.execute(db);
}
