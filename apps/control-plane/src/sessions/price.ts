// What a session's settle adds, priced once: the money its run's usage will say and the energy its record
// will gain (the open interval's, or the park's idle energy and the close's interval). The settle writes
// exactly this, and GET /sandboxes shows exactly this (plus what the record already holds) — one formula.
import { numeric } from '../db/numeric.js';
import { type RunRow, rowToRun } from '../ledger/runs.js';
import { openEnergyUj, parkEnergyUj, sessionUsd } from './meter.js';
import type { Park, SessionRow } from './rows.js';

export interface SessionPrice {
  /** Where the held time (money and the record's energy) stops: now, but never past its deadline. */
  readonly heldUntilMs: number;
  /** The run's `usage.costUsd` once settled: what it had, plus the held time at `sessionUsdPerHour`. */
  readonly costUsd: number;
  /** Parked: the idle energy the record's `resumed` segment carries for this park (estimated, never zero). */
  readonly parkIdleUj: bigint | null;
  /** The executed interval the settle seals: open, since the interval started; parked, none (0: resumed → closed). */
  readonly activeUj: bigint;
}

/** When the session ends by itself: its expiry, or (open) its idle deadline if that comes first. */
export function endsAt(s: SessionRow): number {
  const expires = s.expires_at.getTime();
  return s.state === 'parked' ? expires : Math.min(expires, s.idle_deadline.getTime());
}

/** The price of settling `s` (its run `run`) at `nowMs`, at the tenant's `usdPerHour`. */
export function sessionPrice(s: SessionRow, run: RunRow, nowMs: number, usdPerHour: number): SessionPrice {
  const heldUntilMs = Math.min(nowMs, endsAt(s));
  const costUsd = rowToRun(run).usage.costUsd + sessionUsd(heldUntilMs - s.opened_at.getTime(), usdPerHour);
  const park = s.state === 'parked' ? (s.park as Park | null) : null;
  const parkedMs = Math.max(0, heldUntilMs - (s.parked_at?.getTime() ?? nowMs));
  if (park)
    // A parked session's settle resumes its park (its idle energy) and closes it: no interval ran.
    return { heldUntilMs, costUsd, parkIdleUj: parkEnergyUj(parkedMs, park.bytes), activeUj: 0n };
  // An open session's interval started when it was opened or last resumed; clamped as the record clamps it
  // (transitionTx): [its start, now], ended where the money stops.
  const startedMs = run.interval_started_at !== null ? numeric(run.interval_started_at) : nowMs;
  const endedMs = Math.max(startedMs, Math.min(nowMs, Math.floor(heldUntilMs)));
  return { heldUntilMs, costUsd, parkIdleUj: null, activeUj: BigInt(openEnergyUj(endedMs - startedMs)) };
}
