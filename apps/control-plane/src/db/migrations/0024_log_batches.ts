// Less WAL per logged segment (issue 14, the transparency log's share).
//
// 1. `log_pending` holds ONE row per inserting statement instead of one per segment: the trigger
//    `record_segments_headlog` (per statement, with its transition table) writes the statement's segments as
//    one jsonb array, in (run, idx) order — the batch settle's one write statement leaves one pending row for
//    all the runs it settled, not a row, a primary-key entry and a delete per segment. Keys: t tenant, r run,
//    g group (absent: none), l length, h head. The sequencer expands the rows in id order, then array order,
//    so leaves keep the order they had (commit order across passes, as before). Rows pending at the upgrade
//    become one row, in their id order.
// 2. `log_nodes` no longer receives level-0 nodes: a level-0 node is the hash of the leaf at that index,
//    which `log_leaves` already holds; proofs read it from there (log/store.ts `readNodes`). The level-0 rows
//    written before stay and are simply not read.
// 3. `runs` fillfactor 50 → 30: a run row (≈ 0.9 kB) gets two new versions on the hot path (start, settle).
//    At 50 a page takes four rows, whose twelve versions do not fit before a prune can reclaim the dead ones
//    (their transactions are still visible to others under load): ≈ 0.5 of the updates per run were not HOT,
//    each logging the whole row and an entry in all four indexes. At 30 a page takes two rows, whose six
//    versions fit in the page: both updates HOT without pruning. Pages written before keep theirs.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE log_pending RENAME TO log_pending__old`.execute(db);
  await sql`CREATE TABLE log_pending (id bigserial PRIMARY KEY, leaves jsonb NOT NULL)`.execute(db);
  await sql`INSERT INTO log_pending (leaves)
    SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
             't', tenant_id, 'r', run_id, 'g', group_id, 'l', length, 'h', head)) ORDER BY id)
    FROM log_pending__old HAVING count(*) > 0`.execute(db);
  await sql`DROP TABLE log_pending__old`.execute(db);
  await sql`CREATE OR REPLACE FUNCTION headlog_pending_segments() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO log_pending (leaves)
      SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               't', s.tenant_id, 'r', s.run_id, 'g', r.group_id, 'l', s.idx + 1, 'h', s.head))
             ORDER BY s.run_id, s.idx)
      FROM headlog_new_segments s JOIN runs r ON r.id = s.run_id
      HAVING count(*) > 0;
      RETURN NULL;
    END $$`.execute(db);
  await sql`ALTER TABLE runs SET (fillfactor = 30)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs SET (fillfactor = 50)`.execute(db);
  await sql`ALTER TABLE log_pending RENAME TO log_pending__new`.execute(db);
  await sql`CREATE TABLE log_pending (
    id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    group_id text,
    length integer NOT NULL,
    head text NOT NULL)`.execute(db);
  await sql`INSERT INTO log_pending (tenant_id, run_id, group_id, length, head)
    SELECT e->>'t', e->>'r', e->>'g', (e->>'l')::int, e->>'h'
    FROM log_pending__new p, jsonb_array_elements(p.leaves) WITH ORDINALITY AS x(e, ord)
    ORDER BY p.id, x.ord`.execute(db);
  await sql`DROP TABLE log_pending__new`.execute(db);
  await sql`CREATE OR REPLACE FUNCTION headlog_pending_segments() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO log_pending (tenant_id, run_id, group_id, length, head)
      SELECT s.tenant_id, s.run_id, r.group_id, s.idx + 1, s.head
      FROM headlog_new_segments s JOIN runs r ON r.id = s.run_id
      ORDER BY s.run_id, s.idx;
      RETURN NULL;
    END $$`.execute(db);
  // Level-0 nodes written since `up` are not restored here: they are BLAKE3 hashes of the leaves, which SQL
  // cannot compute; code from before this migration needs them in log_nodes (rebuild from log_leaves).
}
