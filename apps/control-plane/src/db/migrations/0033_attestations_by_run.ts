// A run's attestation bodies by run id: a record read (`readRecord`'s bundle, GET /runs/:id/record, the
// sessions list's batch) selects `attestations WHERE run_id = …`, which had only the primary key on `address`
// to go by — a scan of every run's attestations per read, growing with the ledger.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS attestations_run ON attestations (run_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS attestations_run`.execute(db);
}
