// Smaller row versions per run (issue 14), no statement of the hot path changed.
//
// 1. `runs`: the columns a transition writes move to the end of the row. A same-page (HOT) update's WAL
//    record carries only the bytes between the first and the last that changed (PostgreSQL's prefix/suffix
//    compression of `log_heap_update`); with `status` fourth and `interval_head` thirtieth, the start and the
//    settle each logged nearly the whole row (≈ 880 B, the spec's jsonb included). After: the immutable columns
//    (ids, spec, origin, attach, envelope, lineage …) come first, then what only the settle writes (outputs,
//    usage, error, ended_at, record head/length), then what every transition writes (status, updated_at,
//    attempt, the interval). The start logs ≈ 100 B, the settle its outputs and the narrow tail. Column order
//    is physical only: every query names its columns (`RETURNING *` and `selectAll` map by name). The move is
//    rename → add → copy → drop (one rewrite of each row at upgrade; the dropped columns stay as null bits).
// 2. `adm_slots`: its updates (claim: status, started_at; settle: status) become HOT. `adm_slots_active`
//    (tenant, lifetime) WHERE status IN (running, awaiting_input) named `status` in its predicate, so every
//    status change wrote new entries in every index of the table (pkey included). Its one reader — the create
//    snapshot's earliest expected end of a running run that gave a duration — reads `adm_slot_ends` instead:
//    a row per running slot that has an expected duration (ttlSec), kept in the slot's own transaction by a
//    trigger that fires only for such slots (WHEN expected_duration_ms IS NOT NULL; a slot without one costs
//    nothing). `adm_slots` pages keep 30 % free for the new versions, and `status` moves after `started_at`
//    (the two columns a claim writes; a settle writes `status` alone), for the same reason as in `runs`.
import { type Kysely, sql } from 'kysely';

/** The tail of `runs`, in its new order: [name, type, NOT NULL, default]. */
const TAIL: ReadonlyArray<readonly [string, string, boolean, string | null]> = [
  ['usage', 'jsonb', true, null],
  ['error', 'jsonb', false, null],
  ['outputs', 'jsonb', true, null],
  ['ended_at', 'timestamptz', false, null],
  ['record_head', 'text', true, null],
  ['record_length', 'integer', true, '0'],
  ['trajectory_open', 'boolean', true, 'false'],
  ['status', 'text', true, null],
  ['updated_at', 'bigint', true, null],
  ['attempt', 'integer', true, '0'],
  ['interval_started_at', 'bigint', false, null],
  ['interval_head', 'text', false, null],
];

const TERMINAL = `('succeeded', 'failed', 'cancelled')`;
const SEAL_TRIGGER = `CREATE TRIGGER runs_trajectory_seal_on_update AFTER UPDATE OF status ON runs FOR EACH ROW
  WHEN (NEW.trajectory_open AND NEW.status IN ${TERMINAL} AND OLD.status NOT IN ${TERMINAL})
  EXECUTE FUNCTION everdict_trajectory_seal_enqueue()`;

const ACTIVE = `('running', 'awaiting_input')`;

const SLOT_ENDS = [
  `DROP INDEX IF EXISTS adm_slots_active`,
  // `status` last too (after started_at): a claim logs started_at and status, a settle status alone.
  `ALTER TABLE adm_slots RENAME COLUMN status TO status__old`,
  `ALTER TABLE adm_slots ADD COLUMN status text`,
  `UPDATE adm_slots SET status = status__old`,
  `ALTER TABLE adm_slots DROP COLUMN status__old, ALTER COLUMN status SET NOT NULL`,
  `CREATE TABLE adm_slot_ends (
     tenant text NOT NULL, run_id text NOT NULL, lifetime text NOT NULL, end_ms bigint NOT NULL,
     PRIMARY KEY (tenant, run_id))`,
  `CREATE FUNCTION everdict_slot_ends() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NEW.status IN ${ACTIVE} AND NEW.started_at IS NOT NULL THEN
         INSERT INTO adm_slot_ends (tenant, run_id, lifetime, end_ms)
         VALUES (NEW.tenant, NEW.run_id, NEW.lifetime, NEW.started_at + NEW.expected_duration_ms)
         ON CONFLICT (tenant, run_id) DO UPDATE SET lifetime = EXCLUDED.lifetime, end_ms = EXCLUDED.end_ms;
       ELSE
         DELETE FROM adm_slot_ends WHERE tenant = NEW.tenant AND run_id = NEW.run_id;
       END IF;
       RETURN NULL;
     END $$`,
  `CREATE TRIGGER adm_slots_ends_on_insert AFTER INSERT ON adm_slots FOR EACH ROW
     WHEN (NEW.expected_duration_ms IS NOT NULL AND NEW.status IN ${ACTIVE} AND NEW.started_at IS NOT NULL)
     EXECUTE FUNCTION everdict_slot_ends()`,
  `CREATE TRIGGER adm_slots_ends_on_update AFTER UPDATE OF status, started_at ON adm_slots FOR EACH ROW
     WHEN (NEW.expected_duration_ms IS NOT NULL)
     EXECUTE FUNCTION everdict_slot_ends()`,
  `INSERT INTO adm_slot_ends (tenant, run_id, lifetime, end_ms)
     SELECT tenant, run_id, lifetime, started_at + expected_duration_ms FROM adm_slots
     WHERE status IN ${ACTIVE} AND started_at IS NOT NULL AND expected_duration_ms IS NOT NULL`,
  `ALTER TABLE adm_slots SET (fillfactor = 70)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS runs_trajectory_seal_on_update ON runs`.execute(db);
  const old = (c: string) => `${c}__old`;
  for (const [c] of TAIL) await sql.raw(`ALTER TABLE runs RENAME COLUMN ${c} TO ${old(c)}`).execute(db);
  await sql.raw(`ALTER TABLE runs ${TAIL.map(([c, t]) => `ADD COLUMN ${c} ${t}`).join(', ')}`).execute(db);
  await sql.raw(`UPDATE runs SET ${TAIL.map(([c]) => `${c} = ${old(c)}`).join(', ')}`).execute(db);
  const fix = TAIL.flatMap(([c, , notNull, dflt]) => [
    `DROP COLUMN ${old(c)}`,
    ...(notNull ? [`ALTER COLUMN ${c} SET NOT NULL`] : []),
    ...(dflt !== null ? [`ALTER COLUMN ${c} SET DEFAULT ${dflt}`] : []),
  ]);
  await sql.raw(`ALTER TABLE runs ${fix.join(', ')}`).execute(db);
  await sql.raw(SEAL_TRIGGER).execute(db);
  await sql`ALTER TABLE runs SET (fillfactor = 50)`.execute(db);
  for (const s of SLOT_ENDS) await sql.raw(s).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The column order stays (physical only); the slots get their index back.
  await sql`ALTER TABLE adm_slots RESET (fillfactor)`.execute(db);
  await sql
    .raw(
      `CREATE INDEX IF NOT EXISTS adm_slots_active ON adm_slots (tenant, lifetime) WHERE status IN ${ACTIVE}`,
    )
    .execute(db);
  await sql`DROP TRIGGER IF EXISTS adm_slots_ends_on_update ON adm_slots`.execute(db);
  await sql`DROP TRIGGER IF EXISTS adm_slots_ends_on_insert ON adm_slots`.execute(db);
  await sql`DROP FUNCTION IF EXISTS everdict_slot_ends()`.execute(db);
  await sql`DROP TABLE IF EXISTS adm_slot_ends`.execute(db);
}
