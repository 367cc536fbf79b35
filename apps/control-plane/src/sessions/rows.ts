// Session rows: lookups (tenant-scoped, creator-or-admin for anything that attaches) and activity marks.
import { isTerminalStatus, type RunStatus } from '@everdict/run-model';
import { type Selectable, sql } from 'kysely';
import type { SessionsTable } from '../db/schema-sessions.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { findRun, type RunRow } from '../ledger/runs.js';
import type { Principal } from '../services/types.js';

export type SessionRow = Selectable<SessionsTable>;

/** The image park a parked session's row names. */
export interface Park {
  readonly address: string;
  readonly path: string;
  readonly manifest: string;
  readonly bytes: number;
}

/** Attach is not a read: exec, terminal, touch, close, suspend and resume are the creator's or an admin's. */
export function mayAttach(p: Principal, run: Pick<RunRow, 'created_by'>): boolean {
  return p.role === 'admin' || run.created_by === p.actor;
}

/**
 * The caller's session `runId`: 404 when no such run in the tenant, 403 when the caller may not attach,
 * 409 when the run is not a live session. `lock`: the row is locked (FOR UPDATE) for the transaction.
 */
export async function sessionOf(
  ex: Executor,
  p: Principal,
  runId: string,
  opts: { lock?: boolean; state?: 'open' | 'parked' } = {},
): Promise<{ run: RunRow; session: SessionRow }> {
  const run = await findRun(ex, p.tenantId, runId);
  if (!run) throw notFound('run', runId);
  if (run.kind !== 'sandbox' || run.lifetime !== 'session')
    throw new ControlPlaneError('conflict', `run ${runId} is not a session`, { runId });
  if (!mayAttach(p, run))
    throw new ControlPlaneError('forbidden', 'only the session’s creator or an admin may attach to it', {
      runId,
    });
  let q = ex
    .selectFrom('sessions')
    .selectAll()
    .where('tenant_id', '=', p.tenantId)
    .where('run_id', '=', runId);
  if (opts.lock) q = q.forUpdate();
  const session = await q.executeTakeFirst();
  if (!session || isTerminalStatus(run.status as RunStatus))
    throw new ControlPlaneError('conflict', `session ${runId} has ended (${run.status})`, {
      runId,
      status: run.status,
      reason: 'session_ended',
    });
  if (opts.state && session.state !== opts.state)
    throw new ControlPlaneError('conflict', `session ${runId} is ${session.state}`, {
      runId,
      state: session.state,
      reason: opts.state === 'open' ? 'session_parked' : 'session_open',
    });
  return { run, session };
}

/** Traffic: the idle deadline moves to now + idle timeout (+ `extraMs` for a command still running). */
export async function markActive(
  ex: Executor,
  tenant: string,
  runId: string,
  now: Date,
  extraMs = 0,
): Promise<void> {
  await sql`UPDATE sessions SET last_activity_at = ${now},
      idle_deadline = GREATEST(idle_deadline, ${now}::timestamptz + make_interval(secs => idle_timeout_sec + ${extraMs / 1000}::float8))
    WHERE tenant_id = ${tenant} AND run_id = ${runId} AND state = 'open'`.execute(ex);
}

/**
 * Undoes a markActive at `marked` whose operation was refused (the compute unreachable): the row's activity as
 * it was before — unless other traffic marked it since.
 */
export async function unmarkActive(
  ex: Executor,
  tenant: string,
  runId: string,
  marked: Date,
  before: { last_activity_at: Date; idle_deadline: Date },
): Promise<void> {
  await sql`UPDATE sessions SET last_activity_at = ${before.last_activity_at}, idle_deadline = ${before.idle_deadline}
    WHERE tenant_id = ${tenant} AND run_id = ${runId} AND state = 'open' AND last_activity_at = ${marked}`.execute(
    ex,
  );
}

/** Like markActive, but the deadline may move earlier (after a long command ends). */
export async function resetIdle(ex: Executor, tenant: string, runId: string, now: Date): Promise<void> {
  await sql`UPDATE sessions SET last_activity_at = ${now},
      idle_deadline = ${now}::timestamptz + make_interval(secs => idle_timeout_sec)
    WHERE tenant_id = ${tenant} AND run_id = ${runId} AND state = 'open'`.execute(ex);
}
