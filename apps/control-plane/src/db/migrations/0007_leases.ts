// Leases (src/leases/): a running execution holds one lease per run; `runs.attempt` counts the run's
// starts and is the lease's epoch (fencing token): a result carrying another epoch is stale.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs ADD COLUMN IF NOT EXISTS attempt integer NOT NULL DEFAULT 0`.execute(db);
  await sql`CREATE TABLE run_leases (
    run_id text PRIMARY KEY,
    tenant text NOT NULL,
    holder text NOT NULL,
    epoch bigint NOT NULL,
    granted_at_ms bigint NOT NULL,
    renewed_at_ms bigint NOT NULL,
    expires_at_ms bigint NOT NULL)`.execute(db);
  await sql`CREATE INDEX run_leases_expiry ON run_leases (expires_at_ms)`.execute(db);
  await sql`CREATE INDEX run_leases_holder ON run_leases (holder)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS run_leases`.execute(db);
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS attempt`.execute(db);
}
