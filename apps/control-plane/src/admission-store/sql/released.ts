// Released counters (migration 0021): what settles gave back, kept off the rows creates and claims lock.
// A settle adds to its stripe's row (`adm_envelope_releases`: in flight, spend; `adm_tenant_releases`:
// running); the true value is the main row's minus (in flight, running) or plus (spend) the stripes' sum.
// Plain reads use the views `adm_envelopes_now` / `adm_tenants_now`; the guarded writes (create, claim) lock the
// main row and subtract the sums read by their own statement: a settle committed after that statement's
// snapshot is not seen, so a guard reads a count that is too high, never too low — a cap refuses early under a
// race, it never admits one too many. `foldReleases` moves the sums back into the main rows. Spend on either
// row is kept to admission's MAX_USD (budget.ts `boundedUsd`): a reader's sum stays finite.
import { sql } from 'kysely';
import type { Executor } from '../../db/tx.js';
import { boundedUsd } from './budget.js';

/** Stripes per released row: a settle writes the stripe of its connection (`pg_backend_pid() % STRIPES`). */
export const STRIPES = 8;
export const STRIPE_SQL = sql`(pg_backend_pid() % ${sql.lit(STRIPES)})::smallint`;

/** A tenant row's running count as its alias `t` holds it less what settles released: SQL over `t`. */
export const runningOf = (t: string) =>
  sql`GREATEST(${sql.raw(t)}.running - (SELECT COALESCE(sum(x.running), 0) FROM adm_tenant_releases x
    WHERE x.tenant = ${sql.raw(t)}.tenant), 0)`;

/** The released sums of the envelopes a CTE `from` lists as (tenant, id): (tenant, id, n, usd, tokens). */
export const envelopeReleases = (from: string) =>
  sql`SELECT d.tenant, d.id, COALESCE(sum(x.in_flight), 0)::int AS n, COALESCE(sum(x.spent_usd), 0)::float8 AS usd,
      COALESCE(sum(x.spent_tokens), 0)::float8 AS tokens
    FROM ${sql.raw(from)} d LEFT JOIN adm_envelope_releases x ON x.tenant = d.tenant AND x.id = d.id
    GROUP BY d.tenant, d.id`;

/**
 * Fold released sums back into the main rows where a stripe holds more than `threshold` released runs (the
 * main counters only grow between folds; a fold keeps them far from the integer range). Envelopes, then
 * tenant rows, each in the order every transaction locks them (main rows, then their release rows); the
 * release rows are read under their lock, so a settle committing meanwhile is either folded or kept.
 * Asynchronous commit: a crash loses the fold and its subtraction together. Returns the rows folded.
 */
export async function foldReleases(ex: Executor, threshold = 100_000): Promise<number> {
  const env = await sql<{ n: number | string }>`
    WITH due AS MATERIALIZED (
      SELECT DISTINCT tenant, id FROM adm_envelope_releases WHERE in_flight > ${threshold}::int
    ),
    main AS MATERIALIZED (
      SELECT e.tenant, e.id FROM adm_envelopes e JOIN due USING (tenant, id) ORDER BY e.tenant, e.id FOR UPDATE OF e
    ),
    rel AS MATERIALIZED (
      SELECT x.tenant, x.id, x.stripe, x.in_flight, x.spent_usd, x.spent_tokens FROM adm_envelope_releases x
      JOIN main USING (tenant, id) ORDER BY x.tenant, x.id, x.stripe FOR UPDATE OF x
    ),
    sums AS (SELECT tenant, id, sum(in_flight)::int AS n, ${boundedUsd(sql`sum(${boundedUsd(sql`spent_usd`)})`)} AS usd,
      sum(spent_tokens) AS tokens FROM rel GROUP BY tenant, id),
    up AS (
      UPDATE adm_envelopes e SET in_flight = GREATEST(e.in_flight - s.n, 0),
        spent_usd = ${boundedUsd(sql`${boundedUsd(sql`e.spent_usd`)} + s.usd`)},
        spent_tokens = e.spent_tokens + s.tokens
      FROM sums s WHERE e.tenant = s.tenant AND e.id = s.id RETURNING 1
    ),
    zero AS (
      UPDATE adm_envelope_releases x SET in_flight = x.in_flight - r.in_flight, spent_usd = x.spent_usd - r.spent_usd,
        spent_tokens = x.spent_tokens - r.spent_tokens
      FROM rel r WHERE x.tenant = r.tenant AND x.id = r.id AND x.stripe = r.stripe RETURNING 1
    ),
    async AS (SELECT set_config('synchronous_commit', 'off', true) AS s)
    SELECT (SELECT count(*) FROM up) AS n WHERE (SELECT count(*) FROM zero) >= 0
      AND (SELECT count(*) FROM async) = 1`.execute(ex);
  const ten = await sql<{ n: number | string }>`
    WITH due AS MATERIALIZED (SELECT DISTINCT tenant FROM adm_tenant_releases WHERE running > ${threshold}::int),
    main AS MATERIALIZED (
      SELECT t.tenant FROM adm_tenants t JOIN due USING (tenant) ORDER BY t.tenant FOR UPDATE OF t
    ),
    rel AS MATERIALIZED (
      SELECT x.tenant, x.stripe, x.running FROM adm_tenant_releases x JOIN main USING (tenant)
      ORDER BY x.tenant, x.stripe FOR UPDATE OF x
    ),
    up AS (
      UPDATE adm_tenants t SET running = GREATEST(t.running - s.n, 0)
      FROM (SELECT tenant, sum(running)::int AS n FROM rel GROUP BY tenant) s WHERE t.tenant = s.tenant RETURNING 1
    ),
    zero AS (
      UPDATE adm_tenant_releases x SET running = x.running - r.running
      FROM rel r WHERE x.tenant = r.tenant AND x.stripe = r.stripe RETURNING 1
    ),
    async AS (SELECT set_config('synchronous_commit', 'off', true) AS s)
    SELECT (SELECT count(*) FROM up) AS n WHERE (SELECT count(*) FROM zero) >= 0
      AND (SELECT count(*) FROM async) = 1`.execute(ex);
  return Number(env.rows[0]?.n ?? 0) + Number(ten.rows[0]?.n ?? 0);
}
