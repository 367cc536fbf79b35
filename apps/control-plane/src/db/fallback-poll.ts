// How often a loop woken by announcements also looks on its own. Every such loop (the dispatch loop, the runner
// and agent-host lease long-polls, the session relay's drain, the head log's probe) is woken when something it
// waits for commits — by NOTIFY, or in memory when no other process listens (listener-presence.ts) — and looks
// on a timer too, in case an announcement was lost: a LISTEN connection that broke, or a replica that began
// listening just after an announcement went out in memory.
//
// A process alone on its database cannot lose one: nobody else writes there. On PGlite no other process can
// open the database at all; on PostgreSQL, while listener-presence sees no other control-plane listener, every
// write is this process's own and announced to it in memory. Such a process spaces its fallback looks
// `aloneMs` apart (EVERDICT_ALONE_POLL_MS, default 5 × `pollMs`) instead of `pollMs`: an idle embedded main job
// sent ≈ 28 statements a second, most of them these looks (control-plane README, "Idle cost"). A second process
// appearing is seen within one presence look (1 s); from then on both look every `pollMs` again, and the
// newcomer's own looks cover what it missed, as before.
//
// Loops whose work comes due by time — the lease sweep, the sessions' reaper, the schedules' read, the vacuum
// keeper — are spaced the same way, with one more reason to look: the earliest deadline their last look read
// (`NudgedLooks.dueBy`). Alone, every write that brings such a deadline nearer is this process's own and is
// announced to it (a fact), or tells the loop in-process where it announces nothing (a session command's end, a
// schedule created): an idle main job's time-driven statements fell from ≈ 5 to ≈ 1.5 a second.
import type { LedgerDatabase } from './database.js';

export interface FallbackPoll {
  /** The period of a loop's timer while other processes share the database. */
  readonly pollMs: number;
  /** The period while this process is alone on it (≥ pollMs). */
  readonly aloneMs: number;
  /** No other process can write to the database unannounced to this one, as of now. */
  alone(): boolean;
  /** How long a loop waits before its next fallback look, as of now. */
  periodMs(): number;
  /**
   * For a timer ticking every `pollMs`: whether this tick should look, the last look having started at
   * `lastMs` (performance.now()). Always while not alone; while alone, once `aloneMs` has (nearly) passed.
   */
  due(lastMs: number, nowMs?: number): boolean;
}

export function fallbackPoll(
  ldb: Pick<LedgerDatabase, 'dialect' | 'alone'>,
  pollMs: number,
  aloneMs: number = 5 * pollMs,
): FallbackPoll {
  const spaced = Math.max(pollMs, aloneMs);
  const alone = () => ldb.dialect === 'pglite' || ldb.alone?.() === true;
  return {
    pollMs,
    aloneMs: spaced,
    alone,
    periodMs: () => (alone() ? spaced : pollMs),
    // Half a tick of slack: a timer firing a hair early must not push the look a whole tick later.
    due: (lastMs, nowMs = performance.now()) => !alone() || nowMs - lastMs >= spaced - pollMs / 2,
  };
}

/** Every look on `pollMs`, alone or not (a loop that must keep its period, or a test). */
export function everyPoll(pollMs: number): FallbackPoll {
  return { pollMs, aloneMs: pollMs, alone: () => false, periodMs: () => pollMs, due: () => true };
}

/**
 * The looks of a loop that polls on a short timer for work its writers announce (a fact, a dispatch) — the head
 * log's probe, the seal queue, the subscriptions consumer. While not alone, every tick looks. While alone, a tick
 * looks when a `nudge()` came since the last look (an announcement heard: it is delivered after the commit of
 * what it announces, so the next look sees that) or within `trailMs` after one, or once `aloneMs` has passed
 * since the last look (for work that comes due by time, or was written without an announcement); the other
 * ticks are skipped (`skipped`).
 *
 * A loop whose work also comes due by time (a lease's expiry, a session's deadline, a schedule's next slot) says
 * when, after each look, with `dueBy(at)`: the first tick at or after that time looks too. Every write that
 * brings a deadline nearer is announced with a fact in the same process while it is alone (a lease granted, a
 * session opened or resumed), so between a look and the next nudge the deadlines it read are all there are.
 */
export class NudgedLooks {
  #nudged = false;
  #nudgedAt = Number.NEGATIVE_INFINITY;
  #lookedAt = Number.NEGATIVE_INFINITY;
  #dueAt = Number.POSITIVE_INFINITY;
  /** Alone at the last tick: a tick that finds the process alone again looks (no deadline was read meanwhile). */
  #wasAlone = false;
  /** Ticks that did not look (a recorded refusal, for tests and figures). */
  skipped = 0;

  constructor(
    private readonly fallback: Pick<FallbackPoll, 'alone' | 'aloneMs'> | undefined,
    /** The loop's tick. */
    private readonly tickMs: number,
    /**
     * Every tick also looks this long after a nudge (default 0): for work a look can miss at first — the
     * subscriptions outbox reads only below the oldest open transaction, which another commit may be holding.
     */
    private readonly trailMs = 0,
  ) {}

  /** Something this loop waits for was written: the next tick looks. */
  nudge(nowMs: number = performance.now()): void {
    this.#nudged = true;
    this.#nudgedAt = nowMs;
  }

  /**
   * Work this loop knows of comes due at `atMs` (in the clock the loop passes to `look` as `clockMs`): the first
   * tick at or after it looks. The earliest of several holds; a look forgets it (the loop says the next after it).
   * Deadlines are read while alone only: the first tick that finds the process alone again looks, and reads them.
   */
  dueBy(atMs: number): void {
    if (atMs < this.#dueAt) this.#dueAt = atMs;
  }

  /**
   * Whether this tick should look; a look is noted as taken. `nowMs` (performance.now()) spaces the looks;
   * `clockMs` is compared with `dueBy` (the loop's clock, wall time by default).
   */
  look(nowMs: number = performance.now(), clockMs: number = Date.now()): boolean {
    const f = this.fallback;
    const alone = f?.alone() === true;
    const stillAlone = alone && this.#wasAlone;
    this.#wasAlone = alone;
    const quiet =
      stillAlone &&
      !this.#nudged &&
      nowMs - this.#nudgedAt > this.trailMs &&
      nowMs - this.#lookedAt < f.aloneMs - this.tickMs / 2 &&
      clockMs < this.#dueAt;
    if (quiet) {
      this.skipped++;
      return false;
    }
    this.#nudged = false;
    this.#lookedAt = nowMs;
    this.#dueAt = Number.POSITIVE_INFINITY;
    return true;
  }
}
