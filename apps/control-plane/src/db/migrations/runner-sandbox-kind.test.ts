// Migration 0027 on a database with runners paired before the `sandbox` kind decided session placement: every
// non-revoked runner registers `sandbox` in each image it had registered (and its capabilities say so), so the
// sessions it could hold before the upgrade it still can; a revoked runner gains nothing.
import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { unmigratedDatabase } from '../../../test/db.js';
import { migrateToLatest } from '../database.js';
import { migrationProvider } from './index.js';

const fresh = unmigratedDatabase;

describe('migration 0027 (runner sandbox kind)', () => {
  let done: (() => Promise<void>) | undefined;
  afterEach(async () => done?.());

  it('registers sandbox for every image of a non-revoked runner, once', async () => {
    const { h, drop } = await fresh();
    done = async () => {
      await h.close();
      await drop();
    };
    const db = h.db;
    const migrator = new Migrator({ db, provider: migrationProvider });
    expect((await migrator.migrateTo('0026_session_execs')).error).toBeUndefined();
    const caps = (kinds: string[]) =>
      JSON.stringify({ drivers: ['process'], kinds, images: ['x'], slots: 1 });
    await sql`INSERT INTO runners (id, tenant_id, name, public_key, credential_hash, capabilities, state, created_at)
      VALUES ('a', NULL, 'a', 'k', 'h1', ${caps(['command', 'eval'])}::jsonb, 'active', now()),
             ('b', 't', 'b', 'k', 'h2', ${caps(['command', 'sandbox'])}::jsonb, 'draining', now()),
             ('c', NULL, 'c', 'k', 'h3', ${caps(['command'])}::jsonb, 'revoked', now())`.execute(db);
    await sql`INSERT INTO runner_images (runner_id, tenant_id, kind, image) VALUES
      ('a', NULL, 'command', 'default'), ('a', NULL, 'eval', 'default'), ('a', NULL, 'eval', 'py:3'),
      ('b', 't', 'command', '*'), ('b', 't', 'sandbox', '*')`.execute(db);

    expect(await migrateToLatest(db)).toContain('0027_runner_sandbox_kind');
    const { rows } = await sql<{ runner_id: string; tenant_id: string | null; image: string }>`
      SELECT runner_id, tenant_id, image FROM runner_images WHERE kind = 'sandbox'
      ORDER BY runner_id, image`.execute(db);
    expect(rows).toEqual([
      { runner_id: 'a', tenant_id: null, image: 'default' },
      { runner_id: 'a', tenant_id: null, image: 'py:3' },
      { runner_id: 'b', tenant_id: 't', image: '*' },
    ]);
    const { rows: kinds } = await sql<{ id: string; kinds: string[] }>`
      SELECT id, capabilities -> 'kinds' AS kinds FROM runners ORDER BY id`.execute(db);
    expect(kinds).toEqual([
      { id: 'a', kinds: ['command', 'eval', 'sandbox'] },
      { id: 'b', kinds: ['command', 'sandbox'] },
      { id: 'c', kinds: ['command'] },
    ]);
  });
});
