// Scoring in run-model's vocabulary: a score names its grader's type, and a scoring lists the member
// runs it skipped (not yet settled). `scores.detail` holds run-model's detail string (as a jsonb string).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE scores ADD COLUMN grader_type text NOT NULL DEFAULT ''`.execute(db);
  await sql`ALTER TABLE scorings ADD COLUMN skipped_run_ids jsonb NOT NULL DEFAULT '[]'::jsonb`.execute(db);
  await sql`CREATE INDEX scores_scoring ON scores (scoring_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS scores_scoring`.execute(db);
  await sql`ALTER TABLE scorings DROP COLUMN IF EXISTS skipped_run_ids`.execute(db);
  await sql`ALTER TABLE scores DROP COLUMN IF EXISTS grader_type`.execute(db);
}
