// When a subscription last started answering events: its creation, or its latest re-enabling. The consumer
// skips events older than it (a subscription re-enabled while the consumer is behind does not fire for what
// happened while it was disabled) and the schedule ticker fires no slot older than it (no late fire for a slot
// that passed while the schedule was disabled). Existing subscriptions answer from their creation, as before.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE subscriptions ADD COLUMN enabled_at timestamptz`.execute(db);
  await sql`UPDATE subscriptions SET enabled_at = created_at`.execute(db);
  await sql`ALTER TABLE subscriptions ALTER COLUMN enabled_at SET NOT NULL`.execute(db);
}
