// Fewer and smaller row versions per run (issue 14). A run row is updated twice on the hot path (started,
// settled); those updates are HOT — no index entry written, the new version on the same page — when no
// indexed column changes and the page has room:
// - `status` leaves every index of `runs`: runs_tenant_status goes (a status filter walks the tenant's
//   runs newest first through runs_tenant_created), runs_expiring keeps its column without the status
//   predicate (no query reads it by status);
// - `runs` pages keep 30 % free for the new versions (fillfactor 70; pages written before keep theirs).
// The trajectory seal queue takes only runs that recorded a trajectory event: the first append marks the run
// (`trajectory_open`, set in the writer's lock only while the run is not terminal), and the terminal
// transition queues a seal only for a marked run. Runs live at this migration are marked (their appends
// predate the mark), so none of them loses its seal.
import { type Kysely, sql } from 'kysely';

const TERMINAL = `('succeeded', 'failed', 'cancelled')`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS runs_tenant_status`.execute(db);
  await sql`DROP INDEX IF EXISTS runs_expiring`.execute(db);
  await sql`CREATE INDEX runs_expiring ON runs (expires_at) WHERE expires_at IS NOT NULL`.execute(db);
  await sql`ALTER TABLE runs SET (fillfactor = 70)`.execute(db);
  await sql`ALTER TABLE runs ADD COLUMN trajectory_open boolean NOT NULL DEFAULT false`.execute(db);
  await sql.raw(`UPDATE runs SET trajectory_open = true WHERE status NOT IN ${TERMINAL}`).execute(db);
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_update ON runs`.execute(db);
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_insert ON runs`.execute(db);
  await sql
    .raw(`CREATE TRIGGER runs_trajectory_seal_on_update AFTER UPDATE OF status ON runs FOR EACH ROW
      WHEN (NEW.trajectory_open AND NEW.status IN ${TERMINAL} AND OLD.status NOT IN ${TERMINAL})
      EXECUTE FUNCTION everdict_trajectory_seal_enqueue()`)
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_update ON runs`.execute(db);
  await sql
    .raw(`CREATE TRIGGER runs_trajectory_seal_on_update AFTER UPDATE OF status ON runs FOR EACH ROW
      WHEN (NEW.status IN ${TERMINAL} AND OLD.status NOT IN ${TERMINAL})
      EXECUTE FUNCTION everdict_trajectory_seal_enqueue()`)
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER runs_trajectory_seal_on_insert AFTER INSERT ON runs FOR EACH ROW
      WHEN (NEW.status IN ${TERMINAL})
      EXECUTE FUNCTION everdict_trajectory_seal_enqueue()`)
    .execute(db);
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS trajectory_open`.execute(db);
  await sql`ALTER TABLE runs RESET (fillfactor)`.execute(db);
  await sql`DROP INDEX IF EXISTS runs_expiring`.execute(db);
  await sql
    .raw(
      `CREATE INDEX runs_expiring ON runs (expires_at) WHERE expires_at IS NOT NULL AND status IN ('queued','running','awaiting_input')`,
    )
    .execute(db);
  await sql`CREATE INDEX runs_tenant_status ON runs (tenant_id, status, created_at DESC)`.execute(db);
}
