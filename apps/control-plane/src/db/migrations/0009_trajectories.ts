// Trajectories (issue 12, control-plane half): the sealed trajectory's ref on the run, a durable "to seal"
// queue filled by a trigger in the same transaction that makes a run terminal (so no settle path has to
// know about it, and a crash between settle and seal loses nothing), the tenants' retention policy, the
// deletions retention made, and the scores of imported trajectories.
import { type Kysely, sql } from 'kysely';

const TERMINAL = `('succeeded', 'failed', 'cancelled')`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs ADD COLUMN IF NOT EXISTS trajectory jsonb`.execute(db);

  await sql`CREATE TABLE trajectory_seal_queue (
    run_id text PRIMARY KEY,
    tenant_id text NOT NULL,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    not_before timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    last_error text
  )`.execute(db);
  await sql`CREATE INDEX trajectory_seal_queue_due ON trajectory_seal_queue (not_before)`.execute(db);

  await sql
    .raw(`CREATE OR REPLACE FUNCTION everdict_trajectory_seal_enqueue() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO trajectory_seal_queue (run_id, tenant_id) VALUES (NEW.id, NEW.tenant_id)
          ON CONFLICT (run_id) DO NOTHING;
        RETURN NULL;
      END $$`)
    .execute(db);
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

  await sql`CREATE TABLE trajectory_policies (
    tenant_id text PRIMARY KEY,
    retention_days integer CHECK (retention_days IS NULL OR retention_days BETWEEN 1 AND 100000),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`.execute(db);

  await sql`CREATE TABLE trajectory_deletions (
    id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    trajectory_id text NOT NULL,
    digest text NOT NULL,
    sealed_at timestamptz NOT NULL,
    deleted_at timestamptz NOT NULL,
    reason text NOT NULL,
    record jsonb NOT NULL,
    UNIQUE (tenant_id, trajectory_id)
  )`.execute(db);

  await sql`CREATE TABLE trajectory_scores (
    id text PRIMARY KEY,
    tenant_id text NOT NULL,
    trajectory_id text NOT NULL,
    grader text NOT NULL,
    grader_type text NOT NULL,
    value double precision NOT NULL,
    passed boolean,
    detail jsonb NOT NULL DEFAULT 'null',
    digest text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`.execute(db);
  await sql`CREATE INDEX trajectory_scores_by_trajectory ON trajectory_scores (tenant_id, trajectory_id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS trajectory_scores`.execute(db);
  await sql`DROP TABLE IF EXISTS trajectory_deletions`.execute(db);
  await sql`DROP TABLE IF EXISTS trajectory_policies`.execute(db);
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_insert ON runs`.execute(db);
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_update ON runs`.execute(db);
  await sql`DROP FUNCTION IF EXISTS everdict_trajectory_seal_enqueue()`.execute(db);
  await sql`DROP TABLE IF EXISTS trajectory_seal_queue`.execute(db);
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS trajectory`.execute(db);
}
