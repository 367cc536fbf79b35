// The vacuum keeper on a live PostgreSQL (src/db/vacuum-keeper.ts): in `auto` mode it keeps exactly when the
// server runs no autovacuum, and a table another session holds (a replica's VACUUM) is skipped, never waited
// for — the look returns while the lock is held, and the table is vacuumed by a later look.
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { VacuumKeeper } from '../src/db/vacuum-keeper.js';
import { eventually } from './core.js';
import { announceSkippedLiveSuite, LIVE_PG, type TestDatabase, testDatabase } from './db.js';

announceSkippedLiveSuite('test/vacuum-keeper.pg.test.ts');

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => undefined);
});

const quiet = () => undefined;

async function database(): Promise<{ db: TestDatabase; admin: pg.Client }> {
  const db = await testDatabase({ poolSize: 2 });
  cleanup.push(() => db.dispose());
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  cleanup.push(() => admin.end());
  return { db, admin };
}

/** `n` dead row versions in a table of the ledger's schema made for this test (its stats flushed). */
async function churn(admin: pg.Client, table: string, n: number): Promise<void> {
  await admin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
  await admin.query(`INSERT INTO ${table} SELECT g, 'x' FROM generate_series(1, $1::int) g`, [n]);
  await admin.query(`DELETE FROM ${table}`);
  await admin.query('SELECT pg_stat_force_next_flush()');
  await admin.query('SELECT 1');
}

async function deadRows(admin: pg.Client, table: string): Promise<number> {
  const { rows } = await admin.query(
    'SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relname = $1',
    [table],
  );
  return rows[0]?.n ?? 0;
}

describe.runIf(LIVE_PG)('the vacuum keeper on PostgreSQL', () => {
  it("keeps in `auto` mode exactly when the server's autovacuum is off", async () => {
    const { db, admin } = await database();
    const { rows } = await admin.query("SELECT current_setting('autovacuum') AS a");
    const keeper = new VacuumKeeper(db.db, 'postgres', quiet, { checkMs: 3_600_000 });
    await keeper.start();
    cleanup.push(() => keeper.stop());
    expect(keeper.idleReason).toBe(rows[0].a === 'on' ? 'the server runs autovacuum' : null);
  });

  it('skips a table another session holds, without waiting, and vacuums it on a later look', async () => {
    const { db, admin } = await database();
    await churn(admin, 'vacuum_probe', 2_000);
    await eventually(async () => ((await deadRows(admin, 'vacuum_probe')) >= 2_000 ? true : undefined));
    const keeper = new VacuumKeeper(db.db, 'postgres', quiet, { checkMs: 3_600_000, mode: 'always' });
    await keeper.start();
    cleanup.push(() => keeper.stop());

    // Another session holds the lock a VACUUM takes (what a replica's VACUUM of the table holds).
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    cleanup.push(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE vacuum_probe IN SHARE UPDATE EXCLUSIVE MODE');
    await keeper.check(); // returns while the lock is still held: SKIP_LOCKED
    expect(keeper.vacuums).toBe(1);
    expect(await deadRows(admin, 'vacuum_probe')).toBeGreaterThanOrEqual(2_000);

    await holder.query('COMMIT');
    await keeper.check();
    expect(keeper.vacuums).toBe(2);
    await eventually(async () => ((await deadRows(admin, 'vacuum_probe')) === 0 ? true : undefined));
  });

  it("leaves a table its role does not own to that table's owner", async () => {
    const { db, admin } = await database();
    const role = `everdict_vac_${process.pid}`;
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.query(`CREATE ROLE ${role}`);
    cleanup.push(() => admin.query(`DROP ROLE IF EXISTS ${role}`));
    await churn(admin, 'not_ours', 2_000);
    await admin.query(`ALTER TABLE not_ours OWNER TO ${role}`);
    cleanup.push(() => admin.query('DROP TABLE IF EXISTS not_ours'));
    await eventually(async () => ((await deadRows(admin, 'not_ours')) >= 2_000 ? true : undefined));
    // The keeper's connections as a role that owns nothing here (a superuser may vacuum anything).
    const user = `everdict_user_${process.pid}`;
    await admin.query(`DROP ROLE IF EXISTS ${user}`);
    await admin.query(`CREATE ROLE ${user} LOGIN`);
    cleanup.push(() => admin.query(`DROP ROLE IF EXISTS ${user}`));
    const url = new URL(db.url ?? '');
    url.username = user;
    const asUser = new Kysely<never>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url.toString(), max: 1 }) }),
    });
    cleanup.push(() => asUser.destroy());
    const keeper = new VacuumKeeper(asUser, 'postgres', quiet, { checkMs: 3_600_000, mode: 'always' });
    await keeper.start();
    cleanup.push(() => keeper.stop());
    await keeper.check();
    expect(keeper.vacuums).toBe(0);
    expect(keeper.vacuumed.has('not_ours')).toBe(false);
  });
});
