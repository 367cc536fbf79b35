// How a session ends, in one transaction: the session row locked (SKIP LOCKED for the reaper: another
// replica already has it), the compute disposed, the run settled with its metered cost and energy, and the
// row deleted — so a session is settled exactly once, by whichever replica got the row. After the commit:
// the park's snapshot object is deleted and the trajectory sealed.
//   closed | expired | idle → succeeded, outputs.result.endReason, record closed(completed)
//   lost                    → failed executor_lost, record closed(abandoned)
//   (cancelled)             → the cancel already settled the run (closed(cancelled)); this disposes and forgets
import { isTerminalStatus, type RunStatus, type SessionEndReason } from '@everdict/run-model';
import type { Hex } from '@everdict/runrecord';
import { type Executor, withTx } from '../db/tx.js';
import { selectRunRows } from '../ledger/runs.js';
import type { Deps } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { type ComputeSources, computeOf, disposeQuietly, handleOf } from './compute.js';
import type { SessionLog } from './log.js';
import { OPEN_SESSION_WATTS, SESSION_METER } from './meter.js';
import { sessionPolicy } from './policy.js';
import { sessionPrice } from './price.js';
import type { Park, SessionRow } from './rows.js';
import type { SnapshotStore } from './snapshots.js';

export type SessionEnd = SessionEndReason | 'lost' | 'cancelled';

export interface SettleContext extends ComputeSources {
  readonly deps: Deps;
  readonly snapshots: SnapshotStore;
  readonly log: SessionLog;
}

/** Settle one session; false when there was no row (already settled) or another replica holds it. */
export async function settleSession(
  ctx: SettleContext,
  tenant: string,
  runId: string,
  end: SessionEnd,
  opts: {
    skipLocked?: boolean;
    /** Re-decided under the row lock (a touch may have moved a deadline since the sweep looked): null = leave it. */
    decide?: (
      s: SessionRow,
      runStatus: string,
      tx: Executor,
    ) => SessionEnd | null | Promise<SessionEnd | null>;
  } = {},
): Promise<boolean> {
  const { deps } = ctx;
  const park = await withTx(deps.db, async (tx) => {
    let q = tx.selectFrom('sessions').selectAll().where('tenant_id', '=', tenant).where('run_id', '=', runId);
    q = opts.skipLocked ? q.forUpdate().skipLocked() : q.forUpdate();
    const s = await q.executeTakeFirst();
    if (!s) return undefined;
    const row = await selectRunRows(tx)
      .selectAll()
      .where('tenant_id', '=', tenant)
      .where('id', '=', runId)
      .executeTakeFirstOrThrow();
    const why = opts.decide ? await opts.decide(s, row.status, tx) : end;
    if (why === null) return undefined;
    end = why;
    const parked = s.park as Park | null;
    if (!isTerminalStatus(row.status as RunStatus)) {
      const policy = await sessionPolicy(tx, tenant);
      // Money and the record's energy for the time it was held: up to now, but never past its deadline — a
      // session is not open past its expiry (or, open, its idle deadline), however late the sweep (a backlog,
      // every replica down). Priced by `sessionPrice`, as GET /sandboxes shows it.
      const price = sessionPrice(s, row, deps.clock().getTime(), policy.sessionUsdPerHour);
      const heldUntil = price.heldUntilMs;
      const cost = { costUsd: price.costUsd };
      if (end === 'lost') {
        await transitionTx(
          tx,
          deps,
          tenant,
          runId,
          {
            type: 'fail',
            error: {
              code: 'executor_lost',
              message: 'the host holding this session was lost',
              retryable: false,
            },
          },
          {
            usage: cost,
            closeReason: 'abandoned',
            interval: { watts: OPEN_SESSION_WATTS, meter: SESSION_METER },
            intervalEndMs: heldUntil,
          },
        );
      } else {
        const resumesPark = row.status === 'awaiting_input' && parked !== null && price.parkIdleUj !== null;
        if (resumesPark) {
          // A parked session ends: the record resumes the park it holds (its idle energy counted, up to where
          // the money stops) and closes.
          await transitionTx(
            tx,
            deps,
            tenant,
            runId,
            { type: 'resume_input' },
            {
              image: { root: parked.address as Hex, idleUj: price.parkIdleUj },
              manifest: parked.manifest,
            },
          );
        }
        await transitionTx(
          tx,
          deps,
          tenant,
          runId,
          { type: 'succeed' },
          {
            outputs: { result: { endReason: end === 'cancelled' ? 'closed' : end } },
            usage: cost,
            interval: { watts: OPEN_SESSION_WATTS, meter: SESSION_METER },
            // The record's interval stops where the money does (never before it started).
            intervalEndMs: heldUntil,
            // A park resumed only to close ran nothing: resumed → closed, no executed interval.
            nothingRan: resumesPark,
          },
        );
      }
    }
    await tx.deleteFrom('sessions').where('tenant_id', '=', tenant).where('run_id', '=', runId).execute();
    // Disposal before the commit: a commit that fails leaves a row whose compute is gone (the next exec or
    // sweep settles it lost) rather than compute with no row.
    if (s.handle) {
      const compute = (() => {
        try {
          return computeOf(ctx, s.holder);
        } catch {
          return null; // no driver here for that holder: reconciliation or the holder's reap removes it
        }
      })();
      if (compute) await disposeQuietly(compute, handleOf(s.handle));
    }
    return parked;
  });
  if (park === undefined) return false;
  if (park) await ctx.snapshots.delete(tenant, park.path).catch(() => undefined);
  await ctx.log.seal(tenant, runId);
  return true;
}
