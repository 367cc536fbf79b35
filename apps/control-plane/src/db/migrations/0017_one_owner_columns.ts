// One owner per column (issue 10 §3). A run's causal depth, child count and start time are admission's
// (`adm_slots.depth`, `children`, `started_at` in epoch ms): the ledger's copies go and every run read joins
// its slot (`ledger/runs.ts` `selectRunRows`; every run is created through admission and slots are never
// deleted). The ledger's one remaining scheduling time on `runs`, the current interval's start, becomes
// epoch ms like every time the claim, the sweep and the leases compare; ISO strings are made at the edge.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // A slot's start is the run's: copy a start the ledger alone knew (none expected; kept rather than lost).
  await sql`UPDATE adm_slots s SET started_at = (extract(epoch FROM r.started_at) * 1000)::bigint
    FROM runs r WHERE s.tenant = r.tenant_id AND s.run_id = r.id AND s.started_at IS NULL
      AND r.started_at IS NOT NULL`.execute(db);
  await sql`ALTER TABLE runs DROP COLUMN causal_depth, DROP COLUMN children_count, DROP COLUMN started_at`.execute(
    db,
  );
  await sql`ALTER TABLE runs ALTER COLUMN interval_started_at TYPE bigint
    USING (extract(epoch FROM interval_started_at) * 1000)::bigint`.execute(db);
  // The last transition's time: the claim and the sweep take a run only when it is not in the future, ready
  // parks are leased in its order and a resume's idle time is measured from it — a scheduling input.
  await sql`ALTER TABLE runs ALTER COLUMN updated_at TYPE bigint
    USING (extract(epoch FROM updated_at) * 1000)::bigint`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs ALTER COLUMN updated_at TYPE timestamptz
    USING to_timestamp(updated_at / 1000.0)`.execute(db);
  await sql`ALTER TABLE runs ALTER COLUMN interval_started_at TYPE timestamptz
    USING to_timestamp(interval_started_at / 1000.0)`.execute(db);
  await sql`ALTER TABLE runs ADD COLUMN started_at timestamptz, ADD COLUMN causal_depth integer NOT NULL DEFAULT 0,
    ADD COLUMN children_count integer NOT NULL DEFAULT 0`.execute(db);
  await sql`UPDATE runs r SET causal_depth = s.depth, children_count = s.children,
      started_at = CASE WHEN s.started_at IS NULL THEN NULL ELSE to_timestamp(s.started_at / 1000.0) END
    FROM adm_slots s WHERE s.tenant = r.tenant_id AND s.run_id = r.id`.execute(db);
}
