// Who drained or revoked a runner, and who revoked an agent host (runners/admin.ts, agents/hosts.ts): the
// acting API key's id (a tenant admin) or `operator` (the service token's door), with the time. Read back by
// GET /runners, GET /internal/runners and GET /agents/hosts (`drainedBy`, `drainedAt`, `revokedBy`).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runners ADD COLUMN IF NOT EXISTS drained_at timestamptz,
    ADD COLUMN IF NOT EXISTS drained_by text, ADD COLUMN IF NOT EXISTS revoked_by text`.execute(db);
  await sql`ALTER TABLE agent_hosts ADD COLUMN IF NOT EXISTS revoked_by text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runners DROP COLUMN IF EXISTS drained_at, DROP COLUMN IF EXISTS drained_by,
    DROP COLUMN IF EXISTS revoked_by`.execute(db);
  await sql`ALTER TABLE agent_hosts DROP COLUMN IF EXISTS revoked_by`.execute(db);
}
