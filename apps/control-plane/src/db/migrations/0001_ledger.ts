// The ledger's first schema: tenants, keys, runs, groups, scores, the outbox, subscriptions, run records.
// Admission state (envelopes, caps, the queue) is 0002, owned by the Postgres admission store.
import { type Kysely, sql } from 'kysely';

const statements = [
  `CREATE TABLE tenants (id text PRIMARY KEY, name text NOT NULL, created_at timestamptz NOT NULL)`,
  `CREATE TABLE api_keys (
     id text PRIMARY KEY, tenant_id text NOT NULL REFERENCES tenants(id), key_hash text NOT NULL UNIQUE,
     role text NOT NULL CHECK (role IN ('member','admin')), label text NOT NULL DEFAULT '',
     created_at timestamptz NOT NULL, revoked_at timestamptz)`,
  `CREATE TABLE runs (
     id text PRIMARY KEY, tenant_id text NOT NULL REFERENCES tenants(id), kind text NOT NULL,
     status text NOT NULL, lifetime text NOT NULL, class text NOT NULL, group_id text, caused_by_run_id text,
     created_by text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
     started_at timestamptz, ended_at timestamptz, expires_at timestamptz,
     causal_depth integer NOT NULL DEFAULT 0, children_count integer NOT NULL DEFAULT 0,
     envelope_id text NOT NULL,
     subject jsonb NOT NULL, origin jsonb NOT NULL, placement jsonb, attach jsonb NOT NULL, envelope jsonb,
     group_ref jsonb, lineage jsonb, outputs jsonb NOT NULL, usage jsonb NOT NULL, error jsonb,
     unit_id text NOT NULL, grants_id text NOT NULL, record_head text NOT NULL,
     record_length integer NOT NULL DEFAULT 0, interval_started_at timestamptz, interval_head text)`,
  `CREATE INDEX runs_tenant_created ON runs (tenant_id, created_at DESC, id DESC)`,
  `CREATE INDEX runs_tenant_kind ON runs (tenant_id, kind, created_at DESC)`,
  `CREATE INDEX runs_tenant_status ON runs (tenant_id, status, created_at DESC)`,
  `CREATE INDEX runs_tenant_group ON runs (tenant_id, group_id) WHERE group_id IS NOT NULL`,
  `CREATE INDEX runs_tenant_cause ON runs (tenant_id, caused_by_run_id) WHERE caused_by_run_id IS NOT NULL`,
  `CREATE INDEX runs_tenant_creator ON runs (tenant_id, created_by, created_at DESC)`,
  `CREATE INDEX runs_expiring ON runs (expires_at) WHERE expires_at IS NOT NULL AND status IN ('queued','running','awaiting_input')`,
  `CREATE TABLE run_groups (
     id text PRIMARY KEY, tenant_id text NOT NULL REFERENCES tenants(id), kind text NOT NULL, label text NOT NULL,
     spec jsonb NOT NULL, scoring_id text, request_id text, created_by text NOT NULL,
     created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`,
  `CREATE UNIQUE INDEX run_groups_request ON run_groups (tenant_id, request_id) WHERE request_id IS NOT NULL`,
  `CREATE INDEX run_groups_tenant ON run_groups (tenant_id, created_at DESC, id DESC)`,
  `CREATE TABLE scorings (
     id text PRIMARY KEY, tenant_id text NOT NULL, group_id text NOT NULL REFERENCES run_groups(id),
     graders jsonb NOT NULL, rescore_of text REFERENCES scorings(id), aggregate jsonb NOT NULL,
     created_at timestamptz NOT NULL)`,
  `CREATE TABLE scores (
     id text PRIMARY KEY, tenant_id text NOT NULL, run_id text NOT NULL REFERENCES runs(id), group_id text,
     scoring_id text NOT NULL REFERENCES scorings(id), grader text NOT NULL, value double precision NOT NULL,
     passed boolean, detail jsonb NOT NULL, rescore_of text, created_at timestamptz NOT NULL)`,
  `CREATE INDEX scores_run ON scores (run_id, created_at)`,
  `CREATE TABLE events (
     id bigserial PRIMARY KEY,
     tx bigint NOT NULL DEFAULT (pg_current_xact_id()::text)::bigint,
     tenant_id text NOT NULL, kind text NOT NULL, run_id text, payload jsonb NOT NULL,
     created_at timestamptz NOT NULL)`,
  `CREATE INDEX events_tenant ON events (tenant_id, id)`,
  `CREATE INDEX events_run ON events (run_id, id) WHERE run_id IS NOT NULL`,
  `CREATE INDEX events_tx ON events (tx, id)`,
  `CREATE TABLE subscriptions (
     id text PRIMARY KEY, tenant_id text NOT NULL REFERENCES tenants(id), name text NOT NULL,
     selector_kind text NOT NULL, selector_filter jsonb NOT NULL, schedule_cron text, schedule_tz text,
     run_spec jsonb NOT NULL, cooldown_sec integer NOT NULL, max_depth integer NOT NULL,
     enabled boolean NOT NULL, last_fired_at timestamptz, created_by text NOT NULL,
     created_at timestamptz NOT NULL, deleted_at timestamptz)`,
  `CREATE INDEX subscriptions_kind ON subscriptions (selector_kind) WHERE enabled AND deleted_at IS NULL`,
  `CREATE TABLE subscription_firings (
     subscription_id text NOT NULL REFERENCES subscriptions(id), event_id bigint NOT NULL, run_id text,
     outcome text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (subscription_id, event_id))`,
  `CREATE TABLE schedule_slots (
     subscription_id text NOT NULL REFERENCES subscriptions(id), slot timestamptz NOT NULL, event_id bigint,
     created_at timestamptz NOT NULL, PRIMARY KEY (subscription_id, slot))`,
  `CREATE TABLE consumer_cursors (consumer text PRIMARY KEY, tx bigint NOT NULL, event_id bigint NOT NULL,
     updated_at timestamptz NOT NULL)`,
  `CREATE TABLE record_segments (
     run_id text NOT NULL REFERENCES runs(id), idx integer NOT NULL, tenant_id text NOT NULL, kind text NOT NULL,
     payload jsonb NOT NULL, head text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (run_id, idx))`,
  `CREATE TABLE attestations (
     address text PRIMARY KEY, tenant_id text NOT NULL, run_id text NOT NULL, body jsonb NOT NULL,
     created_at timestamptz NOT NULL)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const tables = [
    'attestations',
    'record_segments',
    'consumer_cursors',
    'schedule_slots',
    'subscription_firings',
    'subscriptions',
    'events',
    'scores',
    'scorings',
    'run_groups',
    'runs',
    'api_keys',
    'tenants',
  ];
  for (const t of tables) await sql.raw(`DROP TABLE IF EXISTS ${t} CASCADE`).execute(db);
}
