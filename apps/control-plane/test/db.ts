// Test databases: PGlite in-memory by default; with EVERDICT_TEST_DATABASE_URL, a fresh uniquely named
// database on that server (dropped after). A set-but-unreachable server FAILS loudly — never skips.
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { type LedgerDatabase, openDatabase } from '../src/db/database.js';
import { recycledPglite } from './pglite-recycle.js';

export const TEST_DATABASE_URL = process.env.EVERDICT_TEST_DATABASE_URL?.trim() || undefined;
export const LIVE_PG = TEST_DATABASE_URL !== undefined;

export interface TestDatabase extends LedgerDatabase {
  /** The URL of the created database (live PostgreSQL only). */
  url?: string;
  /** Close connections and drop the database. */
  dispose(): Promise<void>;
}

function serverUrl(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5_000 });
  try {
    await c.connect();
  } catch (e) {
    throw new Error(
      `EVERDICT_TEST_DATABASE_URL is set but ${TEST_DATABASE_URL} is unreachable: ${String(e)}`,
    );
  }
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * The variable globalSetup sets to a migrated database on the live server (test/global-setup.ts): a test
 * database is `CREATE DATABASE … TEMPLATE` it, a file copy, instead of running every migration again.
 */
export const PG_TEMPLATE_ENV = 'EVERDICT_TEST_PG_TEMPLATE';

/** A fresh, empty database on the live server (not migrated): for replicas that each open it. */
export async function createLiveDatabase(
  opts: { template?: string } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('createLiveDatabase needs EVERDICT_TEST_DATABASE_URL');
  const name = `everdict_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const template = opts.template === undefined ? '' : ` TEMPLATE ${opts.template}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}${template}`));
  return {
    url: serverUrl(TEST_DATABASE_URL, name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Makes a migrated database to clone test databases from; returns its name and how to drop it. */
export async function createLiveTemplate(): Promise<{ name: string; drop(): Promise<void> }> {
  const live = await createLiveDatabase();
  const handle = await openDatabase({ databaseUrl: live.url, poolSize: 1 });
  await handle.close();
  return { name: new URL(live.url).pathname.slice(1), drop: live.drop };
}

/**
 * A fresh migrated ledger database (a clone of globalSetup's migrated template when there is one; on PGlite, a
 * recycled instance reset to that template's state).
 */
export async function testDatabase(opts: { poolSize?: number } = {}): Promise<TestDatabase> {
  if (!TEST_DATABASE_URL) {
    const handle = await openDatabase({
      pglite: await recycledPglite(), // a fresh one, or a used one verifiably reset (pglite-recycle.ts)
      migrate: false,
    });
    return { ...handle, dispose: () => handle.close() };
  }
  const template = process.env[PG_TEMPLATE_ENV]?.trim();
  const live = await createLiveDatabase(template ? { template } : {});
  // Through openDatabase either way: on a clone it finds every migration applied (its fast path).
  const handle = await openDatabase({ databaseUrl: live.url, poolSize: opts.poolSize ?? 4 });
  return {
    ...handle,
    url: live.url,
    dispose: async () => {
      await handle.close();
      await live.drop();
    },
  };
}

/** For `*.pg.test.ts`: say loudly, once per file, that live-PostgreSQL suites were not run. */
export function announceSkippedLiveSuite(file: string): void {
  if (!LIVE_PG) {
    console.warn(
      `[not run] ${file}: live-PostgreSQL suite skipped (set EVERDICT_TEST_DATABASE_URL to run it)`,
    );
  }
}

/**
 * A fresh database with no migration run (in-memory PGlite, or a new database on the live server): for the
 * migration tests, which migrate it up to a version, write rows as they were then, and go on.
 */
export async function unmigratedDatabase(): Promise<{ h: LedgerDatabase; drop: () => Promise<void> }> {
  if (LIVE_PG) {
    const live = await createLiveDatabase();
    const h = await openDatabase({ databaseUrl: live.url, poolSize: 2, migrate: false });
    return { h, drop: live.drop };
  }
  return { h: await openDatabase({ pglite: new PGlite(), migrate: false }), drop: async () => {} };
}
