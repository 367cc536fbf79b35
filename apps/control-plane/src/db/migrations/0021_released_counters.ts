// Released counters (issue 14): a settle no longer writes the rows a create and a claim lock. Before, every
// settle updated its tenant's root envelope (in flight −1, spend) and tenant row (running −1) and held them
// through its commit's WAL flush, so the next create (envelope, tenant row) and claim (tenant row) queued
// behind an fsync (log_lock_waits on a bench database: create_write and claim_start waiting on tuples of
// adm_envelopes and adm_tenants held by settle_write). Now a settle adds what it releases to striped rows
// of its own (`adm_envelope_releases`, `adm_tenant_releases`, a stripe per connection), and every reader
// subtracts their sum: the views `adm_envelopes_now` and `adm_tenants_now` for plain reads, the
// `released…` expressions of admission-store/sql/released.ts inside the guarded writes. Released sums only
// grow between folds, so a reader that has not yet seen a concurrent settle reads a higher in-flight or
// running count than the truth: a cap can refuse one run early under a race, never admit one too many.
// `foldReleases` moves the sums back into the main rows (locked, in the order every transaction follows).
import { type Kysely, sql } from 'kysely';

const UP = [
  `CREATE TABLE adm_envelope_releases (
     tenant text NOT NULL, id text NOT NULL, stripe smallint NOT NULL,
     in_flight integer NOT NULL DEFAULT 0, spent_usd double precision NOT NULL DEFAULT 0,
     spent_tokens double precision NOT NULL DEFAULT 0, PRIMARY KEY (tenant, id, stripe)) WITH (fillfactor = 50)`,
  `CREATE TABLE adm_tenant_releases (
     tenant text NOT NULL, stripe smallint NOT NULL, running integer NOT NULL DEFAULT 0,
     PRIMARY KEY (tenant, stripe)) WITH (fillfactor = 50)`,
  `CREATE VIEW adm_envelopes_now AS
     SELECT e.id, e.tenant, e.parent_id, e.cap_usd, e.cap_tokens, e.cap_runs,
       e.spent_usd + r.usd AS spent_usd, e.spent_tokens + r.tokens AS spent_tokens, e.spent_runs,
       GREATEST(e.in_flight - r.n, 0) AS in_flight, e.in_flight_cap
     FROM adm_envelopes e CROSS JOIN LATERAL (
       SELECT COALESCE(sum(x.in_flight), 0)::int AS n, COALESCE(sum(x.spent_usd), 0)::float8 AS usd,
         COALESCE(sum(x.spent_tokens), 0)::float8 AS tokens
       FROM adm_envelope_releases x WHERE x.tenant = e.tenant AND x.id = e.id) r`,
  `CREATE VIEW adm_tenants_now AS
     SELECT t.tenant, t.policy, t.weight, t.max_queued, t.max_concurrent, t.queued, t.queued_interactive,
       t.queued_background, t.queued_batch, GREATEST(t.running - r.n, 0) AS running, t.sessions,
       t.member_sessions, t.aged_start, t.aged_n, t.aged_at
     FROM adm_tenants t CROSS JOIN LATERAL (
       SELECT COALESCE(sum(x.running), 0)::int AS n FROM adm_tenant_releases x WHERE x.tenant = t.tenant) r`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const s of UP) await sql.raw(s).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Fold what was released back into the main rows before the tables go.
  await sql`UPDATE adm_envelopes e SET in_flight = GREATEST(e.in_flight - r.n, 0), spent_usd = e.spent_usd + r.usd,
      spent_tokens = e.spent_tokens + r.tokens
    FROM (SELECT tenant, id, sum(in_flight)::int AS n, sum(spent_usd) AS usd, sum(spent_tokens) AS tokens
      FROM adm_envelope_releases GROUP BY tenant, id) r
    WHERE e.tenant = r.tenant AND e.id = r.id`.execute(db);
  await sql`UPDATE adm_tenants t SET running = GREATEST(t.running - r.n, 0)
    FROM (SELECT tenant, sum(running)::int AS n FROM adm_tenant_releases GROUP BY tenant) r
    WHERE t.tenant = r.tenant`.execute(db);
  await sql`DROP VIEW adm_tenants_now`.execute(db);
  await sql`DROP VIEW adm_envelopes_now`.execute(db);
  await sql`DROP TABLE adm_tenant_releases`.execute(db);
  await sql`DROP TABLE adm_envelope_releases`.execute(db);
}
