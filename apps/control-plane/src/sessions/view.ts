// A session as GET /sandboxes shows it: TTL and idle left, and what it has drawn so far — its record's
// energy as it stands plus what its settle now would add (`sessionPrice`, the settle's own pricing), and the
// money its run's usage would then say. Exactly the settled record's figures, were it settled now.
import type { Executor } from '../db/tx.js';
import { readRecord } from '../ledger/records.js';
import type { RunRow } from '../ledger/runs.js';
import { sessionPrice } from './price.js';
import type { SessionRow } from './rows.js';
import type { SessionView } from './types.js';

/** The record's total energy so far (runrecord's cost: active + idle); a record that does not verify: 0. */
async function recordedUj(ex: Executor, run: RunRow): Promise<bigint> {
  if (run.record_length === 0) return 0n;
  const { verify } = await readRecord(ex, run);
  return verify.ok && verify.cost ? BigInt(verify.cost.totalUj) : 0n;
}

export async function sessionView(
  ex: Executor,
  s: SessionRow,
  run: RunRow,
  usdPerHour: number,
  at: Date,
): Promise<SessionView> {
  const now = at.getTime();
  const park = s.park as { address?: string } | null;
  const price = sessionPrice(s, run, now, usdPerHour);
  const energyUj = (await recordedUj(ex, run)) + (price.parkIdleUj ?? 0n) + price.activeUj;
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
