// The artifact sweep (trajectory/artifact-sweep.ts) asks, for each stored artifact, whether any run still needs
// its address: an index on `runner_artifacts.address` answers that without reading the whole table.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX runner_artifacts_address ON runner_artifacts (address)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX runner_artifacts_address`.execute(db);
}
