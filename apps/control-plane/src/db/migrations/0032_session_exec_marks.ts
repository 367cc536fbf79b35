// A session's commands running, one mark each (`session_execs`), replacing the count `sessions.execs_running`
// (0026). A mark lives until its command's timeout (`until`): the driver stops a command at its timeout, so
// past `until` none can still run, whoever started it — a replica that died mid-command leaves a mark that
// stops counting then, where its count stayed high for good. Marks go with their session row (cascade).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE session_execs (
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    exec_id text NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, exec_id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES sessions (tenant_id, run_id) ON DELETE CASCADE)`.execute(db);
  await sql`ALTER TABLE sessions DROP COLUMN IF EXISTS execs_running`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS execs_running integer NOT NULL DEFAULT 0`.execute(
    db,
  );
  await sql`DROP TABLE IF EXISTS session_execs`.execute(db);
}
