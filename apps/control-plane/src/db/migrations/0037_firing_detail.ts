// A trigger's firings are readable (`GET /subscriptions/:id/firings`): each refused one keeps why, in words, next
// to its code — the depth it would have reached, the cooldown left, the envelope that was empty. Firings written
// before have none (`detail` null).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE subscription_firings ADD COLUMN detail text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE subscription_firings DROP COLUMN IF EXISTS detail`.execute(db);
}
