// Cascade jobs (services/cascade.ts): a cancel's cascade over the causal tree, durable so that a crash
// halfway resumes it on the next start. The tenant's opt-out is copied at the cancel: a policy change made
// while a cascade runs does not change which runs it cancels. `batches` counts the bounded transactions.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE cascade_jobs (
    id text PRIMARY KEY,
    tenant_id text NOT NULL,
    root_run_id text NOT NULL,
    reason text NOT NULL,
    skip_kinds jsonb NOT NULL,
    skip_causes jsonb NOT NULL,
    batches integer NOT NULL DEFAULT 0,
    cancelled integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    done_at timestamptz)`.execute(db);
  await sql`CREATE INDEX cascade_jobs_pending ON cascade_jobs (created_at) WHERE done_at IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS cascade_jobs`.execute(db);
}
