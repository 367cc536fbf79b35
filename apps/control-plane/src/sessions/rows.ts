// Session rows: lookups (tenant-scoped, creator-or-admin for anything that attaches) and activity marks.
import { isTerminalStatus, type RunStatus, sessionDue } from '@everdict/run-model';
import { type Selectable, sql } from 'kysely';
import type { SessionsTable } from '../db/schema-sessions.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { findRun, type RunRow } from '../ledger/runs.js';
import type { Principal } from '../services/types.js';

/** What a parked session answers an exec or a terminal: what to do about it. */
const parkedMessage = (runId: string) =>
  `session ${runId} is parked: resume it first (POST /sandboxes/${runId}/resume)`;
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
 * The run exposes `channel` (its `attach` set, as opened): one it does not expose is 409
 * `channel_not_attached` — a session opened without a terminal gets no terminal, whoever asks.
 */
export function requireChannel(run: Pick<RunRow, 'id' | 'attach'>, channel: 'exec' | 'terminal'): void {
  const attach: readonly string[] = Array.isArray(run.attach) ? run.attach : [];
  if (!attach.includes(channel))
    throw new ControlPlaneError(
      'conflict',
      `session ${run.id} does not expose ${channel} (attach: ${attach.join(', ') || 'none'})`,
      { runId: run.id, reason: 'channel_not_attached', channel, attach: [...attach] },
    );
}

/** Whether the row still holds the compute `handleId` on `holder` open (not parked, resumed elsewhere or ended). */
export function holdsCompute(s: SessionRow, holder: string, handleId: string): boolean {
  return s.state === 'open' && s.holder === holder && (s.handle as { id?: unknown } | null)?.id === handleId;
}

/**
 * The caller's session `runId`: 404 when no such run in the tenant, 403 when the caller may not attach,
 * 409 when the run is not a live session. `lock`: the row is locked (FOR UPDATE) for the transaction.
 * `at`: the session must not be due then — past its expiry (or, open, its idle deadline) it has ended, 409
 * `session_ended`, although the reaper has not settled it yet (its row is left to the reaper).
 */
export async function sessionOf(
  ex: Executor,
  p: Principal,
  runId: string,
  opts: { lock?: boolean; state?: 'open' | 'parked'; at?: Date } = {},
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
  const due = opts.at && dueAt(session, opts.at);
  if (due)
    throw new ControlPlaneError('conflict', `session ${runId} has ended (${due})`, {
      runId,
      status: run.status,
      reason: 'session_ended',
      due,
    });
  if (opts.state && session.state !== opts.state)
    throw new ControlPlaneError(
      'conflict',
      session.state === 'parked' ? parkedMessage(runId) : `session ${runId} is ${session.state}`,
      { runId, state: session.state, reason: opts.state === 'open' ? 'session_parked' : 'session_open' },
    );
  return { run, session };
}

/** Whether the session has ended at `at` (run-model `sessionDue`): past its expiry, or, open, its idle deadline. */
export function dueAt(session: SessionRow, at: Date): 'expired' | 'idle' | null {
  return sessionDue(
    { expiresAt: session.expires_at.toISOString(), idleDeadline: session.idle_deadline.toISOString() },
    at.toISOString(),
    session.state === 'parked',
  );
}

/**
 * Traffic (the terminal's bytes; a touch is none — it extends the expiry only): the idle deadline moves to
 * now + idle timeout — never earlier, and never on a session already due (past its expiry or idle deadline,
 * as `sessionDue` decides): terminal bytes arriving before the reaper's next sweep do not revive it.
 */
export async function markActive(ex: Executor, tenant: string, runId: string, now: Date): Promise<void> {
  await sql`UPDATE sessions SET last_activity_at = ${now},
      idle_deadline = GREATEST(idle_deadline, ${now}::timestamptz + make_interval(secs => idle_timeout_sec))
    WHERE tenant_id = ${tenant} AND run_id = ${runId} AND state = 'open'
      AND expires_at > ${now} AND idle_deadline > ${now}`.execute(ex);
}

/*
 * A command's mark (`session_execs`, one row per exec): it counts from its start until its timeout
 * (`until`), the latest the driver lets it run — past that, no command of it can still run, whichever
 * replica started it. So a replica that dies mid-command leaves a mark that stops counting at its timeout;
 * nothing has to notice the replica is gone. The exact idle deadline is then: the last traffic + idle
 * timeout, but never before a counting mark's `until` + idle timeout (its command may still be running).
 */

/**
 * A command starts: its mark, and the idle deadline covers its timeout (never earlier than it was). The
 * activity mark never moves back: a command whose mark was taken before another's start does not hide it.
 */
export async function execStarted(
  ex: Executor,
  tenant: string,
  runId: string,
  execId: string,
  now: Date,
  timeoutMs: number,
): Promise<void> {
  const until = new Date(now.getTime() + timeoutMs);
  await sql`WITH s AS (UPDATE sessions SET last_activity_at = GREATEST(last_activity_at, ${now}),
        idle_deadline = GREATEST(idle_deadline, ${until}::timestamptz + make_interval(secs => idle_timeout_sec))
      WHERE tenant_id = ${tenant} AND run_id = ${runId} AND state = 'open' RETURNING tenant_id, run_id)
    INSERT INTO session_execs (tenant_id, run_id, exec_id, until)
      SELECT tenant_id, run_id, ${execId}, ${until} FROM s`.execute(ex);
}

/**
 * A command ended: its mark goes (with marks already past their timeout), and the deadline is now + idle
 * timeout — or, while another mark still counts, that mark's `until` + idle timeout if later.
 */
export async function execEnded(
  ex: Executor,
  tenant: string,
  runId: string,
  execId: string,
  now: Date,
): Promise<void> {
  await sql`WITH gone AS (DELETE FROM session_execs WHERE tenant_id = ${tenant} AND run_id = ${runId}
        AND (exec_id = ${execId} OR until <= ${now}))
    UPDATE sessions s SET last_activity_at = ${now},
      idle_deadline = GREATEST(${now}::timestamptz + make_interval(secs => s.idle_timeout_sec),
        (SELECT max(e.until) FROM session_execs e WHERE e.tenant_id = s.tenant_id AND e.run_id = s.run_id
          AND e.exec_id <> ${execId} AND e.until > ${now}) + make_interval(secs => s.idle_timeout_sec))
    WHERE s.tenant_id = ${tenant} AND s.run_id = ${runId} AND s.state = 'open'`.execute(ex);
}

/**
 * Undoes an execStarted at `marked` whose command was refused (the compute unreachable) — its own effect
 * only, relative to the row as it is now, never a value read before: its mark goes, and
 *  - the activity as it was `before` if nothing marked the row since this start and no other mark counts,
 *    else as it is;
 *  - the deadline as it was `before`, or as later traffic moved it (its mark + idle timeout) — never before
 *    another counting mark's `until` + idle timeout.
 */
export async function execRefused(
  ex: Executor,
  tenant: string,
  runId: string,
  execId: string,
  marked: Date,
  before: { last_activity_at: Date; idle_deadline: Date },
): Promise<void> {
  await sql`WITH gone AS (DELETE FROM session_execs WHERE tenant_id = ${tenant} AND run_id = ${runId}
        AND exec_id = ${execId}),
      other AS (SELECT max(until) AS until FROM session_execs WHERE tenant_id = ${tenant} AND run_id = ${runId}
        AND exec_id <> ${execId} AND until > ${marked})
    UPDATE sessions s SET
      last_activity_at = CASE WHEN other.until IS NULL AND s.last_activity_at = ${marked}
        THEN ${before.last_activity_at} ELSE s.last_activity_at END,
      idle_deadline = GREATEST(
        CASE WHEN s.last_activity_at = ${marked} THEN ${before.idle_deadline}::timestamptz
          ELSE GREATEST(${before.idle_deadline}::timestamptz,
            s.last_activity_at + make_interval(secs => s.idle_timeout_sec)) END,
        other.until + make_interval(secs => s.idle_timeout_sec))
    FROM other
    WHERE s.tenant_id = ${tenant} AND s.run_id = ${runId} AND s.state = 'open'`.execute(ex);
}

/** The compute was released or replaced (park, resume): no command of it runs, its marks go. */
export async function execsCleared(ex: Executor, tenant: string, runId: string): Promise<void> {
  await ex.deleteFrom('session_execs').where('tenant_id', '=', tenant).where('run_id', '=', runId).execute();
}

/**
 * The session a redeemed terminal ticket attaches to, in the redeeming transaction: open, its run not settled
 * (a cancel leaves the row and compute to the reaper) and not due at `now` — else 409 with the reason every
 * other attach answers (`session_parked`: resume it first; `session_ended`: closed, reaped, cancelled or due).
 */
export async function openForTerminal(
  ex: Executor,
  tenant: string,
  runId: string,
  now: Date,
): Promise<SessionRow & { handle: NonNullable<SessionRow['handle']> }> {
  const s = await ex
    .selectFrom('sessions')
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('run_id', '=', runId)
    .executeTakeFirst();
  if (s?.state === 'parked')
    throw new ControlPlaneError('conflict', parkedMessage(runId), {
      runId,
      state: s.state,
      reason: 'session_parked',
    });
  if (s?.state !== 'open' || !s.handle)
    throw new ControlPlaneError('conflict', `session ${runId} has ended`, { runId, reason: 'session_ended' });
  const run = await findRun(ex, tenant, runId);
  if (!run || isTerminalStatus(run.status as RunStatus))
    throw new ControlPlaneError('conflict', `session ${runId} has ended (${run?.status ?? 'gone'})`, {
      runId,
      reason: 'session_ended',
      status: run?.status ?? null,
    });
  const due = dueAt(s, now);
  if (due)
    throw new ControlPlaneError('conflict', `session ${runId} has ended (${due})`, {
      runId,
      reason: 'session_ended',
      due,
    });
  return { ...s, handle: s.handle };
}
