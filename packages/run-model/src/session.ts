// A session run's lifetime: how long it may stay open (a hard TTL), how long it may sit idle, and how it
// ended. Pure: the control plane's sessions module computes deadlines with these and stores them on rows.
import { z } from 'zod';
import { parseOrThrow, RunModelError } from './errors.js';
import { Timestamp, toMillis } from './primitives.js';

/** Longest a session may be held open by one request or one extension: 366 days (the placement bound). */
export const MAX_SESSION_TTL_SEC = 366 * 24 * 60 * 60;
/** The tenant policy default for `maxSessionTtlSec`: a day. */
export const DEFAULT_MAX_SESSION_TTL_SEC = 86_400;

/**
 * What a session is opened with: `ttlSec` (hard expiry from now), `idleTimeoutSec` (closed after this long
 * without exec or terminal traffic; never more than the TTL matters, but it may be larger — the TTL wins).
 */
export const SessionLifetime = z.strictObject({
  ttlSec: z.int().positive().max(MAX_SESSION_TTL_SEC),
  idleTimeoutSec: z.int().positive().max(MAX_SESSION_TTL_SEC),
});
export type SessionLifetime = z.infer<typeof SessionLifetime>;

/** A session's deadlines as a row holds them: the hard expiry and the idle deadline (last activity + idle). */
export const SessionDeadlines = z.strictObject({
  expiresAt: Timestamp,
  idleDeadline: Timestamp,
});
export type SessionDeadlines = z.infer<typeof SessionDeadlines>;

/** How a session that ended normally ended: `outputs.result.endReason` of a succeeded session run. */
export const SessionEndReason = z.enum(['closed', 'expired', 'idle']);
export type SessionEndReason = z.infer<typeof SessionEndReason>;

/** A succeeded session run's `outputs.result`. */
export const SessionResult = z.strictObject({ endReason: SessionEndReason });
export type SessionResult = z.infer<typeof SessionResult>;

const iso = (ms: number) => new Date(ms).toISOString();

/** Epoch ms of a timestamp argument, or invalid_input (never a RangeError from an unreadable date). */
function millis(ts: string, what: string): number {
  const ms = Timestamp.safeParse(ts).success ? toMillis(ts) : Number.NaN;
  if (!Number.isFinite(ms))
    throw new RunModelError('invalid_input', `${what} is not a timestamp`, { [what]: ts });
  return ms;
}

/** Deadlines of a session opened (or last active) at `now`; invalid_input for a lifetime out of bounds. */
export function sessionDeadlines(lifetime: SessionLifetime, now: string): SessionDeadlines {
  const life = parseOrThrow(SessionLifetime, lifetime, 'session lifetime');
  const at = millis(now, 'now');
  return {
    expiresAt: iso(at + life.ttlSec * 1000),
    idleDeadline: iso(at + life.idleTimeoutSec * 1000),
  };
}

/**
 * The expiry after a touch at `now` asking for `ttlSec` more: extended up to `maxTtlSec` from now, never
 * shortened (a touch asking for less than what is left changes nothing). Both must be positive and finite,
 * `current` and `now` timestamps, the result a representable date; otherwise invalid_input.
 */
export function extendExpiry(current: string, ttlSec: number, maxTtlSec: number, now: string): string {
  const finitePositive = (n: number) => Number.isFinite(n) && n > 0;
  if (!finitePositive(ttlSec) || !finitePositive(maxTtlSec))
    throw new RunModelError('invalid_input', 'ttlSec and maxTtlSec must be positive and finite', {
      ttlSec,
      maxTtlSec,
    });
  const wanted = millis(now, 'now') + Math.min(ttlSec, maxTtlSec) * 1000;
  if (Number.isNaN(new Date(wanted).getTime()))
    throw new RunModelError('invalid_input', 'the extended expiry is past the representable dates', {
      ttlSec,
      maxTtlSec,
    });
  return iso(Math.max(millis(current, 'current'), wanted));
}

/** Why a session is due at `now` (the hard expiry first), or null while it may stay open. */
export function sessionDue(d: SessionDeadlines, now: string, parked = false): 'expired' | 'idle' | null {
  const t = toMillis(now);
  if (t >= toMillis(d.expiresAt)) return 'expired';
  if (!parked && t >= toMillis(d.idleDeadline)) return 'idle';
  return null;
}
