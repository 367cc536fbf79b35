// Agent turn declines (agents/declines.ts): a paired host (or an unpaired holder) that leased a parked turn
// it cannot resume — the record refuses its manifest, or the stored transcript is not the parked snapshot —
// says so (POST /internal/agent/v1/runs/:id/decline). One row per (turn, holder): the lease it declined
// (epoch: a retried decline answers the same), why, and when. The turn is never offered to that holder again.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE agent_turn_declines (
    run_id text NOT NULL,
    holder text NOT NULL,
    tenant_id text NOT NULL,
    epoch bigint NOT NULL,
    reason text NOT NULL,
    message text,
    outcome text NOT NULL,
    declined_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, holder))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS agent_turn_declines`.execute(db);
}
