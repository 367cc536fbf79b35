// A session's commands still running (`execs_running`), so that the idle deadline a command ending leaves is
// exact: now + idle timeout when it was the last one running, never earlier than what another one still
// running was given. A replica that died mid-command leaves the count high: the session's deadline then only
// ever moves later after its commands (each start's deadline covers its own timeout) until the compute is
// parked or resumed, which counts from 0 again.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS execs_running integer NOT NULL DEFAULT 0`.execute(
    db,
  );
}
