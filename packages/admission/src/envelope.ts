// Delegated envelopes along the causal tree. The tenant budget is the root; a slice is a child envelope.
// Metering with headroom: admit while every envelope from the drawn one up to the root has balance left,
// count the run at admit, charge usd/tokens actuals at settle. The per-envelope in-flight cap bounds the
// overshoot: spent < cap + inFlightCap × (largest actual charge of one run).
import type { EnvelopeCaps } from './policy.js';

export interface Spend {
  readonly usd: number;
  readonly tokens: number;
  readonly runs: number;
}

export interface Envelope {
  readonly id: string;
  /** null for a tenant's root envelope. */
  readonly parentId: string | null;
  readonly tenant: string;
  readonly caps: EnvelopeCaps;
  /** usd and tokens are actuals charged at settle; runs are counted at admit (exact, never overshoot). */
  readonly spent: Spend;
  /** Runs admitted against this envelope or any descendant and not yet settled. */
  readonly inFlight: number;
  readonly inFlightCap: number;
}

/** usd/tokens actuals reported when a run settles. */
export interface Actuals {
  readonly usd: number;
  readonly tokens: number;
}

export type Exhaustion = { readonly envelopeId: string; readonly resource: 'usd' | 'tokens' | 'runs' };

export const ZERO_SPEND: Spend = { usd: 0, tokens: 0, runs: 0 };

export function rootEnvelopeId(tenant: string): string {
  return `root:${tenant}`;
}

const NO_ESTIMATE: Actuals = { usd: 0, tokens: 0 };

/**
 * Budgets compare in whole micro-dollars: the one unit of usd arithmetic (a SQL store generates its guard
 * from these two, the control plane's `admission-store/sql/budget.ts`). In binary floating point
 * 0.1 + 0.2 > 0.3, so comparing dollars refused exact fits; amounts with at most 6 decimals compare exactly
 * once rounded to this unit (a float sum drifts by far less than half a unit).
 */
export const MICRO_USD_PER_USD = 1_000_000;

/**
 * Amounts past this count as this much (a cap written as "practically unlimited", a spend past it): in
 * micro-dollars, a float8 product past ~1.8e302 dollars overflows — Infinity here, an error (22003) in SQL.
 */
export const MAX_USD = 1e300;

/** `usd` rounded to whole micro-dollars: floor(min(usd, MAX_USD) × 1e6 + 0.5), each step an IEEE double operation. */
export function toMicroUsd(usd: number): number {
  return Math.floor(Math.min(usd, MAX_USD) * MICRO_USD_PER_USD + 0.5);
}

/** No balance left, or less than the estimate (tokens and runs are integers: exact as they are). */
function lacks(cap: number | undefined, spent: number, estimate: number): boolean {
  return cap !== undefined && (spent >= cap || cap - spent < estimate);
}

function lacksUsd(cap: number | undefined, spent: number, estimate: number): boolean {
  return cap !== undefined && lacks(toMicroUsd(cap), toMicroUsd(spent), toMicroUsd(estimate));
}

/**
 * The resource whose balance is gone on this one envelope, or null while headroom remains. Headroom is
 * "balance left, and at least the estimate if one was given" — a check, never a reservation.
 */
export function exhaustedResource(
  env: Envelope,
  estimate: Actuals = NO_ESTIMATE,
): Exhaustion['resource'] | null {
  const { caps, spent } = env;
  if (lacksUsd(caps.usd, spent.usd, estimate.usd)) return 'usd';
  if (lacks(caps.tokens, spent.tokens, estimate.tokens)) return 'tokens';
  if (lacks(caps.runs, spent.runs, 1)) return 'runs';
  return null;
}

/**
 * A path is the drawn envelope first and the tenant root last; each element's parentId names the next.
 * Throws on a malformed path (a store bug, not a caller's).
 */
export function assertPath(path: readonly Envelope[]): void {
  if (path.length === 0) throw new RangeError('envelope path is empty');
  for (let i = 0; i < path.length; i++) {
    const env = path[i]!;
    const next = path[i + 1];
    if (next ? env.parentId !== next.id : env.parentId !== null) {
      throw new RangeError(`envelope path broken at ${env.id}`);
    }
  }
}

/** The first envelope on the way to the root without balance, or null: every ancestor must have headroom. */
export function exhaustion(path: readonly Envelope[], estimate: Actuals = NO_ESTIMATE): Exhaustion | null {
  for (const env of path) {
    const resource = exhaustedResource(env, estimate);
    if (resource) return { envelopeId: env.id, resource };
  }
  return null;
}

/** The first envelope on the way to the root at its in-flight cap, or null. */
export function inFlightBlock(path: readonly Envelope[]): Envelope | null {
  for (const env of path) if (env.inFlight >= env.inFlightCap) return env;
  return null;
}

/** Balance (402) and in-flight cap (429) both clear on every envelope up to the root. */
export function canAdmit(path: readonly Envelope[]): boolean {
  return exhaustion(path) === null && inFlightBlock(path) === null;
}

/** The same envelope with new counters (one object shape for every envelope: cheap to copy). */
function withCounts(env: Envelope, inFlight: number, usd: number, tokens: number, runs: number): Envelope {
  const { id, parentId, tenant, caps, inFlightCap } = env;
  return { id, parentId, tenant, caps, spent: { usd, tokens, runs }, inFlight, inFlightCap };
}

/** One envelope after admitting a run against it: in-flight + 1, runs + 1. */
export function admittedEnvelope(e: Envelope): Envelope {
  return withCounts(e, e.inFlight + 1, e.spent.usd, e.spent.tokens, e.spent.runs + 1);
}

/** One envelope after a run drawing on it settles: actuals charged, its in-flight slot released. */
export function settledEnvelope(e: Envelope, actuals: Actuals): Envelope {
  return withCounts(
    e,
    Math.max(0, e.inFlight - 1),
    e.spent.usd + actuals.usd,
    e.spent.tokens + actuals.tokens,
    e.spent.runs,
  );
}

/** Admit one run against the path: in-flight + 1 and runs + 1 on every envelope up to the root. */
export function admitOnPath(path: readonly Envelope[]): Envelope[] {
  return path.map(admittedEnvelope);
}

/** Charge actuals to every envelope up to the root (charges propagate to the root). */
export function charge(path: readonly Envelope[], actuals: Actuals): Envelope[] {
  return path.map((e) =>
    withCounts(e, e.inFlight, e.spent.usd + actuals.usd, e.spent.tokens + actuals.tokens, e.spent.runs),
  );
}

/** Settle one run: charge its actuals and release its in-flight slot on every envelope up to the root. */
export function settleOnPath(path: readonly Envelope[], actuals: Actuals): Envelope[] {
  return path.map((e) => settledEnvelope(e, actuals));
}

export interface SliceSpec {
  readonly id: string;
  readonly caps?: EnvelopeCaps;
  readonly inFlightCap?: number;
}

/**
 * A delegated slice of `parent`. Its caps may be written larger than the parent's, but they never
 * buy more: admission walks to the root, so every ancestor's balance binds too.
 */
export function delegate(parent: Envelope, slice: SliceSpec): Envelope {
  const inFlightCap = Math.min(slice.inFlightCap ?? parent.inFlightCap, parent.inFlightCap);
  return {
    id: slice.id,
    parentId: parent.id,
    tenant: parent.tenant,
    caps: slice.caps ?? {},
    spent: ZERO_SPEND,
    inFlight: 0,
    inFlightCap,
  };
}

export function rootEnvelope(tenant: string, caps: EnvelopeCaps, inFlightCap: number): Envelope {
  return {
    id: rootEnvelopeId(tenant),
    parentId: null,
    tenant,
    caps,
    spent: ZERO_SPEND,
    inFlight: 0,
    inFlightCap,
  };
}
