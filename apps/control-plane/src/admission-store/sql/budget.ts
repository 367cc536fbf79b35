// The usd budget guard in SQL, generated from admission's one unit (envelope.ts `MICRO_USD_PER_USD`, `MAX_USD`,
// `toMicroUsd`): cap, spend and estimate are each rounded to whole micro-dollars — floor(min(x, MAX_USD) × 1e6
// + 0.5), the same IEEE double operations in float8 as the kernel's in JS — and compared as integers, so an exact decimal
// fit (cap 0.3, spent 0.1, estimate 0.2) is admitted here exactly when the kernel admits it. Tokens and runs
// are integers: compared as they are.
import { MAX_USD, MICRO_USD_PER_USD } from '@everdict/admission';
import { sql } from 'kysely';

type Fragment = ReturnType<typeof sql>;

/**
 * `x` (a float8 expression of US dollars) counted as at most MAX_USD: the kernel's rule (`toMicroUsd`), which
 * counts any amount past MAX_USD as MAX_USD. Every usd counter a settle or a fold writes is kept to it (the
 * addends bounded first, then the sum), so a counter can never overflow float8 (~1.8e308: SQLSTATE 22003, a
 * settle, fold or read that can never succeed again) however many runs it sums: a reader's sum of the main
 * row and its STRIPES released rows stays below (1 + STRIPES) × MAX_USD. Nothing a decision reads is lost:
 * past MAX_USD every amount compares as MAX_USD.
 */
export function boundedUsd(x: Fragment): Fragment {
  return sql`LEAST((${x})::float8, ${sql.lit(MAX_USD)}::float8)`;
}

/**
 * `toMicroUsd(x)` in SQL: `x` a float8 expression of US dollars, counted as at most MAX_USD (past ~1.8e302 the
 * float8 product overflows: SQLSTATE 22003 where the kernel admitted).
 */
export function microUsd(x: Fragment): Fragment {
  return sql`floor(${boundedUsd(x)} * ${sql.lit(MICRO_USD_PER_USD)}::float8 + 0.5::float8)`;
}

/**
 * The kernel's usd headroom (envelope.ts `exhaustedResource`): no cap, or balance left and at least
 * `estimate`, in whole micro-dollars. Each argument a float8 expression (`cap` may be NULL).
 */
export function usdHeadroom(cap: Fragment, spent: Fragment, estimate: Fragment): Fragment {
  const c = microUsd(cap);
  const s = microUsd(spent);
  return sql`(${cap} IS NULL OR (${s} < ${c} AND ${c} - ${s} >= ${microUsd(estimate)}))`;
}
