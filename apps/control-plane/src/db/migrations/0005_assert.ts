// `everdict_assert(ok, message)`: raises SQLSTATE EV001 unless `ok`. A single autocommit statement that writes
// several tables (the combined create) calls it last, so a guard that no longer holds rolls the WHOLE
// statement back — no BEGIN/COMMIT round trips, no partial write.
import { type Kysely, sql } from 'kysely';

export const ASSERT_SQLSTATE = 'EV001';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`CREATE OR REPLACE FUNCTION everdict_assert(ok boolean, message text) RETURNS boolean
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        IF ok IS NOT TRUE THEN RAISE EXCEPTION USING ERRCODE = '${ASSERT_SQLSTATE}', MESSAGE = message; END IF;
        RETURN true;
      END $$`)
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS everdict_assert(boolean, text)`.execute(db);
}
