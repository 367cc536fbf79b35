// The attempts rule counts LOST executions, not starts (leases/sweep.ts). `runs.attempt` is bumped by every
// start — a claim, a runner's grant, every lease of a ready park (an agent turn's resume) — and stays the
// lease epoch (strictly monotonic per run: stale-epoch refusals depend on it); comparing it with
// maxAttempts failed a turn that had parked and resumed twice on its FIRST lost lease. `lost_attempts` counts
// the executions the sweep requeued (cause `executor_lost`); the sweep fails a run on its maxAttempts-th.
// Runs not yet terminal at upgrade get their count from their `run.requeued` facts (the sweep writes one per
// lost execution, and nothing else requeues); a settled run's count is never read again.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs ADD COLUMN lost_attempts integer NOT NULL DEFAULT 0`.execute(db);
  await sql`UPDATE runs r SET lost_attempts = (
      SELECT count(*)::int FROM events e WHERE e.run_id = r.id AND e.kind = 'run.requeued')
    WHERE r.status NOT IN ('succeeded', 'failed', 'cancelled')
      AND EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.id AND e.kind = 'run.requeued')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS lost_attempts`.execute(db);
}
