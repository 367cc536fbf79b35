// Wire primitives: ids, timestamps, money, tokens and JSON values as they travel and sit in JSON columns.
import { z } from 'zod';

/** Ids are opaque strings; the control plane chooses their format. */
export const Id = z.string().min(1).max(200);
export type Id = z.infer<typeof Id>;

/** An ISO-8601 timestamp with an explicit offset (`Z` or `±hh:mm`). */
export const Timestamp = z.iso.datetime({ offset: true });
export type Timestamp = z.infer<typeof Timestamp>;

/** A token count: a non-negative integer. */
export const Tokens = z.int().nonnegative();

/**
 * US dollars as a JS number. Amounts are sums of per-call prices (≥ 1e-6 USD each); a double keeps
 * ~15 significant digits, so sub-micro-dollar drift is possible and accepted for caps and usage.
 * Anything that must balance to the cent belongs to the billing ledger, not here.
 */
export const Usd = z.number().nonnegative();

// JSON values (objects keeping every own key, `__proto__` included): json-value.ts.
export { JsonObject, JsonValue, ownProtoKeys } from './json-value.js';

/** Milliseconds since the epoch of an ISO timestamp. */
export function toMillis(ts: string): number {
  return Date.parse(ts);
}
