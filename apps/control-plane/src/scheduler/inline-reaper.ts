// Inline runs whose executor is gone. An inline execution is bounded by its timeout, so an `analysis` run
// still `running` long after that (its replica crashed mid-execution, or its settle kept failing) will never
// be settled by anyone: the reaper fails it with `executor_lost` through the ordinary settle path (record
// segments, facts, slot and counters), so its tenant's quota and envelope are freed. Replicas may reap at
// once: a settle writes only runs still running at the version it read, so each run is failed exactly once.
// The interval is attested with 0 W: nothing is known to have run, and an idle wait is not billed as work.
// Assumes every replica runs with the same inline timeout (the reap bound is twice it plus a grace).
import { sql } from 'kysely';
import { retryOnConflict } from '../db/tx.js';
import type { Deps } from '../services/context.js';
import { type Finished, settleMany } from './batch-transitions.js';

export const LOST_CODE = 'executor_lost';

/** The running-since bound past which an inline run's executor is presumed gone. */
export const reapAfterMs = (timeoutMs: number): number => 2 * timeoutMs + 30_000;

/**
 * Fail up to `limit` inline runs (kinds `kinds`) started more than `olderThanMs` ago and still running.
 * Reads the active-slot index only (running slots), never the run history. Returns the ids it failed.
 */
export async function reapLostInline(
  deps: Deps,
  kinds: readonly string[],
  olderThanMs: number,
  limit = 100,
): Promise<string[]> {
  const cutoff = deps.clock().getTime() - olderThanMs;
  const { rows } = await sql<{ tenant: string; run_id: string }>`
    SELECT s.tenant, s.run_id FROM adm_slots s
    WHERE s.status = 'running' AND s.kind = ANY(${[...kinds]}::text[]) AND s.started_at < ${cutoff}::bigint
    ORDER BY s.started_at
    LIMIT ${limit}::int`.execute(deps.db);
  if (rows.length === 0) return [];
  const message = `no result ${olderThanMs} ms after its start: its executor is gone`;
  const items: Finished[] = rows.map((r) => ({
    tenant: r.tenant,
    runId: r.run_id,
    event: { type: 'fail', error: { code: LOST_CODE, message, retryable: true } },
    extras: {
      outputs: { summary: message, exitCode: 1 },
      interval: { journal: { error: LOST_CODE }, watts: 0, meter: 'executor-lost', exitCode: 1 },
    },
  }));
  const failed = await retryOnConflict(() => settleMany(deps.db, deps, items));
  if (failed.length > 0) deps.log('warn', 'inline runs failed: executor lost', { runIds: failed });
  return failed;
}
