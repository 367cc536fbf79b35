// A session as GET /sandboxes shows it: TTL and idle left, and what it has drawn so far — its record's
// energy as it stands plus what its settle now would add (`sessionPrice`, the settle's own pricing), and the
// money its run's usage would then say. Exactly the settled record's figures, were it settled now.
// One session or a list of them: their records' energy is read by `recordedEnergy`, in one batch for a list.
import type { Executor } from '../db/tx.js';
import type { RunRow } from '../ledger/runs.js';
import { sessionPrice } from './price.js';
import { recordedEnergy } from './recorded.js';
import type { SessionRow } from './rows.js';
import type { SessionView } from './types.js';

/** One session's view (GET /sandboxes/:id, a touch's answer): its record read and verified. */
export async function sessionView(
  ex: Executor,
  s: SessionRow,
  run: RunRow,
  usdPerHour: number,
  at: Date,
): Promise<SessionView> {
  const recordedUj = (await recordedEnergy(ex, [run])).get(run.id) ?? 0n;
  return viewOf(s, run, recordedUj, usdPerHour, at);
}

/**
 * The views of many sessions (GET /sandboxes), each `[session row, its run]`, in their order: their records
 * read in one batch (two statements whatever their number; none when no record has a segment yet).
 */
export async function sessionViews(
  ex: Executor,
  listed: readonly (readonly [SessionRow, RunRow])[],
  usdPerHour: number,
  at: Date,
): Promise<SessionView[]> {
  const recorded = await recordedEnergy(
    ex,
    listed.map(([, run]) => run),
  );
  return listed.map(([s, run]) => viewOf(s, run, recorded.get(run.id) ?? 0n, usdPerHour, at));
}

/** The view, given the energy the session's record holds (`recordedEnergy`): no read. */
function viewOf(s: SessionRow, run: RunRow, recordedUj: bigint, usdPerHour: number, at: Date): SessionView {
  const now = at.getTime();
  const park = s.park as { address?: string } | null;
  const price = sessionPrice(s, run, now, usdPerHour);
  const energyUj = recordedUj + (price.parkIdleUj ?? 0n) + price.activeUj;
  return {
    id: s.run_id,
    status: run.status,
    state: s.state,
    image: s.image,
    createdBy: s.created_by,
    holder: s.holder,
    openedAt: s.opened_at.toISOString(),
    expiresAt: s.expires_at.toISOString(),
    ttlLeftSec: Math.max(0, (s.expires_at.getTime() - now) / 1000),
    idleTimeoutSec: s.idle_timeout_sec,
    idleDeadline: s.idle_deadline.toISOString(),
    idleLeftSec: s.state === 'open' ? Math.max(0, (s.idle_deadline.getTime() - now) / 1000) : null,
    lastActivityAt: s.last_activity_at.toISOString(),
    burn: {
      usdPerHour,
      usd: price.costUsd,
      energyUj: Number(energyUj),
      provenance: 'estimated',
    },
    snapshot: park?.address ?? null,
  };
}
