// The head log (issue 18 §2, spec/witnessed-heads.md): every committed record segment leaves a pending row
// IN THE SAME TRANSACTION (trigger `record_segments_headlog` — it fires for every insert into
// record_segments, whichever path writes it: `appendSegments`, the batch settle statement, a runner's
// completion), unsequenced: no global hot row joins a settle. The sequencer (log/sequencer.ts; one replica
// at a time under an advisory lock) moves pending rows into `log_leaves` with dense indexes in commit
// order and writes the perfect subtrees each append completes into `log_nodes` (write-once, keyed by
// (level, idx): a proof is one batch of ≤ 2·log2 n + 2 point reads). Signed tree heads and the witnesses'
// cosignatures are kept. Segments committed before this migration are queued for logging, oldest first.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE log_pending (
    id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    group_id text,
    length integer NOT NULL,
    head text NOT NULL)`.execute(db);
  await sql`CREATE TABLE log_leaves (
    idx bigint PRIMARY KEY,
    leaf bytea NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    group_id text,
    length integer NOT NULL)`.execute(db);
  await sql`CREATE INDEX log_leaves_run ON log_leaves (tenant_id, run_id, idx)`.execute(db);
  await sql`CREATE INDEX log_leaves_group ON log_leaves (tenant_id, group_id, idx)
    WHERE group_id IS NOT NULL`.execute(db);
  await sql`CREATE TABLE log_nodes (
    level smallint NOT NULL,
    idx bigint NOT NULL,
    hash bytea NOT NULL,
    PRIMARY KEY (level, idx))`.execute(db);
  await sql`CREATE TABLE log_tree_heads (
    tree_size bigint PRIMARY KEY,
    root text NOT NULL,
    timestamp_ms bigint NOT NULL,
    log_id text NOT NULL,
    signature text NOT NULL)`.execute(db);
  await sql`CREATE TABLE log_cosignatures (
    tree_size bigint NOT NULL REFERENCES log_tree_heads (tree_size),
    witness text NOT NULL,
    signature text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tree_size, witness))`.execute(db);
  await sql`CREATE FUNCTION headlog_pending_segments() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO log_pending (tenant_id, run_id, group_id, length, head)
      SELECT s.tenant_id, s.run_id, r.group_id, s.idx + 1, s.head
      FROM headlog_new_segments s JOIN runs r ON r.id = s.run_id
      ORDER BY s.run_id, s.idx;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER record_segments_headlog AFTER INSERT ON record_segments
    REFERENCING NEW TABLE AS headlog_new_segments
    FOR EACH STATEMENT EXECUTE FUNCTION headlog_pending_segments()`.execute(db);
  // The steward's audit chain (issue 18 §4): every attestation a runner's key signed and the control plane
  // accepted, in signing order; `audit_prev` as the attestation carries it (null: the chain's first link,
  // or a runner that does not link its attestations — `GET /runners/:id/audit` shows which).
  await sql`CREATE TABLE runner_audit (
    runner_id text NOT NULL,
    seq integer NOT NULL,
    runner_key text NOT NULL,
    address text NOT NULL,
    audit_prev text,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (runner_id, seq))`.execute(db);
  await sql`INSERT INTO log_pending (tenant_id, run_id, group_id, length, head)
    SELECT s.tenant_id, s.run_id, r.group_id, s.idx + 1, s.head
    FROM record_segments s JOIN runs r ON r.id = s.run_id
    ORDER BY s.created_at, s.run_id, s.idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS record_segments_headlog ON record_segments`.execute(db);
  await sql`DROP FUNCTION IF EXISTS headlog_pending_segments()`.execute(db);
  for (const t of [
    'runner_audit',
    'log_cosignatures',
    'log_tree_heads',
    'log_nodes',
    'log_leaves',
    'log_pending',
  ])
    await sql.raw(`DROP TABLE IF EXISTS ${t}`).execute(db);
}
