// An agent's `start_experiment` call starts an experiment GROUP (N eval runs caused by the turn), not one
// run: the call names the group it caused. Like a caused run's, the group call's result is derived from the
// ledger (its runs' statuses), never a second copy.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE agent_calls ADD COLUMN caused_group_id text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE agent_calls DROP COLUMN IF EXISTS caused_group_id`.execute(db);
}
