// Runners (issue 13): daemons that lease runs and execute them on compute they own. Pairing tokens and
// runner credentials are stored as SHA-256 hashes only. `runner_images` is the durable placement index (one
// row per active runner × kind × image) every replica reads to decide whether a command/eval run can be
// placed at all. A runner's leases are rows of `run_leases` (0007, the lease rule; holder = runner id);
// `runner_events` holds the events a runner reported per epoch (the journal an interval's attestation
// commits to); `runner_artifacts` the artifacts it uploaded. `harnesses`: the eval harness registry (versions immutable).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE runners (
    id text PRIMARY KEY,
    tenant_id text,
    name text NOT NULL,
    public_key text NOT NULL,
    credential_hash text NOT NULL UNIQUE,
    capabilities jsonb NOT NULL,
    state text NOT NULL DEFAULT 'active',
    created_at timestamptz NOT NULL,
    last_heartbeat_at timestamptz,
    revoked_at timestamptz)`.execute(db);
  await sql`CREATE INDEX runners_tenant ON runners (tenant_id)`.execute(db);
  await sql`CREATE TABLE runner_pairing_tokens (
    token_hash text PRIMARY KEY,
    tenant_id text,
    name text NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    runner_id text)`.execute(db);
  await sql`CREATE TABLE runner_images (
    runner_id text NOT NULL,
    tenant_id text,
    kind text NOT NULL,
    image text NOT NULL,
    PRIMARY KEY (runner_id, kind, image))`.execute(db);
  await sql`CREATE INDEX runner_images_kind ON runner_images (kind, image)`.execute(db);
  await sql`CREATE TABLE runner_events (
    run_id text NOT NULL,
    epoch integer NOT NULL,
    seq integer NOT NULL,
    event jsonb NOT NULL,
    PRIMARY KEY (run_id, epoch, seq))`.execute(db);
  await sql`CREATE TABLE runner_artifacts (
    run_id text NOT NULL,
    epoch integer NOT NULL,
    path text NOT NULL,
    address text NOT NULL,
    size bigint NOT NULL,
    PRIMARY KEY (run_id, epoch, path))`.execute(db);
  await sql`CREATE TABLE harnesses (
    tenant_id text NOT NULL,
    id text NOT NULL,
    version text NOT NULL,
    image text NOT NULL,
    command jsonb NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id, version))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'harnesses',
    'runner_artifacts',
    'runner_events',
    'runner_images',
    'runner_pairing_tokens',
    'runners',
  ])
    await sql`DROP TABLE IF EXISTS ${sql.raw(t)}`.execute(db);
}
