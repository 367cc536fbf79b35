// Runners' session channels (src/runners/sessions/): one row per runner that holds (or held) an open
// WebSocket session channel — which replica holds it, what its driver offers (driver name, images, slots),
// and `seen_at`, advanced by the holding replica while the channel is open. A runner whose row is older than
// the lease is gone: the sessions it held open are settled lost (failed executor_lost). Placement reads it
// (with `runners.state`) so every replica decides alike.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE session_channels (
    runner_id text PRIMARY KEY,
    replica text NOT NULL,
    driver text NOT NULL,
    images jsonb NOT NULL,
    slots integer NOT NULL,
    connected_at timestamptz NOT NULL,
    seen_at timestamptz NOT NULL)`.execute(db);
  await sql`CREATE INDEX sessions_holder ON sessions (holder) WHERE state = 'open'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS sessions_holder`.execute(db);
  await sql`DROP TABLE IF EXISTS session_channels`.execute(db);
}
