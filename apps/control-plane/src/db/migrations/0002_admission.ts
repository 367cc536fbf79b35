// Admission state behind @everdict/admission's AdmissionStore: policies, envelopes, slots, the WFQ queue.
// Counts (queued, running, sessions, in-flight) live in rows updated by conditional UPDATEs, never in memory.
import { type Kysely, sql } from 'kysely';

const statements = [
  `CREATE TABLE adm_global (id integer PRIMARY KEY, policy jsonb NOT NULL,
     sessions integer NOT NULL DEFAULT 0 CHECK (sessions >= 0),
     member_sessions integer NOT NULL DEFAULT 0 CHECK (member_sessions >= 0))`,
  `CREATE TABLE adm_tenants (
     tenant text PRIMARY KEY, policy jsonb NOT NULL, weight double precision NOT NULL,
     max_queued integer NOT NULL, max_concurrent integer NOT NULL,
     queued integer NOT NULL DEFAULT 0 CHECK (queued >= 0),
     queued_interactive integer NOT NULL DEFAULT 0, queued_background integer NOT NULL DEFAULT 0,
     queued_batch integer NOT NULL DEFAULT 0,
     running integer NOT NULL DEFAULT 0 CHECK (running >= 0),
     sessions integer NOT NULL DEFAULT 0 CHECK (sessions >= 0),
     member_sessions integer NOT NULL DEFAULT 0 CHECK (member_sessions >= 0))`,
  `CREATE TABLE adm_agents (tenant text NOT NULL, agent_id text NOT NULL, enabled boolean NOT NULL,
     PRIMARY KEY (tenant, agent_id))`,
  `CREATE TABLE adm_envelopes (
     id text NOT NULL, tenant text NOT NULL, parent_id text,
     cap_usd double precision, cap_tokens double precision, cap_runs integer,
     spent_usd double precision NOT NULL DEFAULT 0, spent_tokens double precision NOT NULL DEFAULT 0,
     spent_runs integer NOT NULL DEFAULT 0,
     in_flight integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0), in_flight_cap integer NOT NULL, PRIMARY KEY (tenant, id))`,
  `CREATE TABLE adm_admissions (tenant text NOT NULL, request_id text NOT NULL, run_id text NOT NULL,
     decision jsonb NOT NULL, PRIMARY KEY (tenant, request_id))`,
  `CREATE TABLE adm_slots (
     run_id text NOT NULL, tenant text NOT NULL, kind text NOT NULL, cause text NOT NULL, class text NOT NULL,
     lifetime text NOT NULL, status text NOT NULL, caused_by_run_id text, depth integer NOT NULL,
     children integer NOT NULL DEFAULT 0, envelope_id text NOT NULL, member boolean NOT NULL, agent_id text,
     expected_duration_ms bigint, admitted_at bigint NOT NULL, started_at bigint,
     PRIMARY KEY (tenant, run_id))`,
  `CREATE INDEX adm_slots_cause ON adm_slots (tenant, caused_by_run_id) WHERE caused_by_run_id IS NOT NULL`,
  `CREATE INDEX adm_slots_active ON adm_slots (tenant, lifetime) WHERE status IN ('running','awaiting_input')`,
  `CREATE TABLE adm_queue (
     run_id text NOT NULL, tenant text NOT NULL, class text NOT NULL,
     lane smallint NOT NULL, finish double precision NOT NULL, seq bigserial NOT NULL, enqueued_at bigint NOT NULL,
     PRIMARY KEY (tenant, run_id))`,
  `CREATE INDEX adm_queue_order ON adm_queue (lane, finish, seq)`,
  `CREATE INDEX adm_queue_age ON adm_queue (enqueued_at, seq)`,
  `CREATE TABLE adm_wfq (tenant text NOT NULL, lane smallint NOT NULL, last_finish double precision NOT NULL,
     PRIMARY KEY (tenant, lane))`,
  `CREATE TABLE adm_vtime (lane smallint PRIMARY KEY, v double precision NOT NULL)`,
  `INSERT INTO adm_vtime (lane, v) VALUES (0, 0), (1, 0), (2, 0)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'adm_vtime',
    'adm_wfq',
    'adm_queue',
    'adm_slots',
    'adm_admissions',
    'adm_envelopes',
    'adm_agents',
    'adm_tenants',
    'adm_global',
  ]) {
    await sql.raw(`DROP TABLE IF EXISTS ${t} CASCADE`).execute(db);
  }
}
