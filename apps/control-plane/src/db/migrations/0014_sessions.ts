// Sessions (src/sessions/): one row per open or parked session run, holding its deadlines (the reaper's
// sweep keys), the compute handle (or, while parked, the image park's snapshot), and what has been metered
// so far. The row is deleted in the transaction that settles the run, so a row is never a terminal run.
// Terminal tickets: single-use, short-lived, stored hashed, redeemed by a conditional UPDATE on any replica.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE sessions (
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    created_by text NOT NULL,
    image text NOT NULL,
    state text NOT NULL CHECK (state IN ('open', 'parked')),
    idle_timeout_sec integer NOT NULL,
    opened_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    idle_deadline timestamptz NOT NULL,
    last_activity_at timestamptz NOT NULL,
    holder text NOT NULL,
    handle jsonb,
    park jsonb,
    parked_at timestamptz,
    trajectory_bytes bigint NOT NULL DEFAULT 0,
    trajectory_truncated boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, run_id))`.execute(db);
  await sql`CREATE INDEX sessions_expiry ON sessions (expires_at)`.execute(db);
  await sql`CREATE INDEX sessions_idle ON sessions (idle_deadline) WHERE state = 'open'`.execute(db);
  await sql`CREATE INDEX sessions_run ON sessions (run_id)`.execute(db);
  await sql`CREATE TABLE terminal_tickets (
    ticket_hash text PRIMARY KEY,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    actor text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    redeemed_at timestamptz)`.execute(db);
  await sql`CREATE INDEX terminal_tickets_expiry ON terminal_tickets (expires_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS terminal_tickets`.execute(db);
  await sql`DROP TABLE IF EXISTS sessions`.execute(db);
}
