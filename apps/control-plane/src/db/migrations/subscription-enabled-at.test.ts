// Migration 0028 on a database with subscriptions made before `enabled_at`: each answers from its creation, as
// it did (enabled or not, deleted or not), and the column is required from then on.
import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { unmigratedDatabase } from '../../../test/db.js';
import { migrateToLatest } from '../database.js';
import { migrationProvider } from './index.js';

const fresh = unmigratedDatabase;

describe('migration 0028 (subscription enabled_at)', () => {
  let done: (() => Promise<void>) | undefined;
  afterEach(async () => done?.());

  it('sets enabled_at to each subscription’s creation and requires it', async () => {
    const { h, drop } = await fresh();
    done = async () => {
      await h.close();
      await drop();
    };
    const db = h.db;
    const migrator = new Migrator({ db, provider: migrationProvider });
    expect((await migrator.migrateTo('0027_runner_sandbox_kind')).error).toBeUndefined();
    await sql`INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', now())`.execute(db);
    await sql`INSERT INTO subscriptions (id, tenant_id, name, selector_kind, selector_filter, schedule_cron,
        schedule_tz, run_spec, cooldown_sec, max_depth, enabled, last_fired_at, created_by, created_at, deleted_at)
      VALUES
        ('on', 't', 'on', 'run.queued', '{}', NULL, NULL, '{}', 0, 3, true, NULL, 'k',
          '2026-01-02T03:04:05.678Z', NULL),
        ('off', 't', 'off', 'run.queued', '{}', NULL, NULL, '{}', 0, 3, false, NULL, 'k',
          '2026-02-03T04:05:06.789Z', NULL),
        ('cron', 't', 'cron', 'schedule.fired', '{}', '* * * * *', 'UTC', '{}', 0, 3, true,
          '2026-03-04T05:06:00.000Z', 'k', '2026-03-04T05:00:00.000Z', NULL),
        ('gone', 't', 'gone', 'run.queued', '{}', NULL, NULL, '{}', 0, 3, false, NULL, 'k',
          '2026-04-05T06:07:08.901Z', '2026-04-06T00:00:00.000Z')`.execute(db);

    expect(await migrateToLatest(db)).toContain('0028_subscription_enabled_at');
    const { rows } = await sql<{ id: string; same: boolean }>`
      SELECT id, enabled_at = created_at AS same FROM subscriptions ORDER BY id`.execute(db);
    expect(rows).toEqual([
      { id: 'cron', same: true },
      { id: 'gone', same: true },
      { id: 'off', same: true },
      { id: 'on', same: true },
    ]);
    const { rows: cols } = await sql<{ is_nullable: string; data_type: string }>`
      SELECT is_nullable, data_type FROM information_schema.columns
      WHERE table_name = 'subscriptions' AND column_name = 'enabled_at'`.execute(db);
    expect(cols).toEqual([{ is_nullable: 'NO', data_type: 'timestamp with time zone' }]);
  });
});
