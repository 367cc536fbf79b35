// The session relay (src/runners/sessions/relay.ts): frames between replicas for sessions whose runner's
// channel another replica holds. One row per frame, addressed to a replica; the addressee deletes what it
// reads (woken by NOTIFY, with a poll fallback), so a row lives for milliseconds. Rows addressed to a replica
// that died are swept by any replica once older than the relay's stale age (created_at is the server's clock).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE session_relay (
    id bigserial PRIMARY KEY,
    to_replica text NOT NULL,
    from_replica text NOT NULL,
    conv text NOT NULL,
    seq integer NOT NULL,
    kind text NOT NULL,
    body bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`CREATE INDEX session_relay_to ON session_relay (to_replica, id)`.execute(db);
  await sql`CREATE INDEX session_relay_created ON session_relay (created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS session_relay`.execute(db);
}
