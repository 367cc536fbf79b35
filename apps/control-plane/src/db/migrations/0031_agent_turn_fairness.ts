// Agent turns (agents/leases.ts, agents/declines.ts, leases/sweep.ts):
//   - `runs.resume_lost_at` (ms, NULL: never): when a parked turn's resume lease was last lost (its holder
//     died before `resumed`; the sweep counts it). Ready parks are offered oldest-ready first, and a lost
//     resume makes the turn ready again NOW — behind the parks that waited meanwhile — not at its park time
//     (`updated_at`, which stays the park's start: its idle energy is measured from it).
//   - `agent_turn_declines.capabilities` (sha-256 hex of the holder's declared capability set, NULL: none
//     declared): a decline bars its holder only while the holder presents that same capability set.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs ADD COLUMN resume_lost_at bigint`.execute(db);
  await sql`ALTER TABLE agent_turn_declines ADD COLUMN capabilities text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE agent_turn_declines DROP COLUMN IF EXISTS capabilities`.execute(db);
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS resume_lost_at`.execute(db);
}
