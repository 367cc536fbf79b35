// Opens the ledger database: PostgreSQL via `pg` when a URL is given, otherwise PGlite (embedded).
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { LISTENER_PREFIX, ListenerPresence } from './listener-presence.js';
import { migrationProvider } from './migrations/index.js';
import { prepareMarkedStatements } from './prepared.js';
import type { Database } from './schema.js';
import { ConnectionWarmth, warmingPool } from './warm-pool.js';

export type Dialect = 'postgres' | 'pglite';
export type Listener = (payload: string) => void;
/** A channel alone (payload '') or [channel, payload]. */
export type Notification = string | readonly [string, string];
/** What an announcer needs of the LISTEN side to skip a NOTIFY no other process would hear. */
export type LocalDelivery = Pick<LedgerDatabase, 'alone' | 'deliverLocally'>;

export interface LedgerDatabase {
  db: Kysely<Database>;
  dialect: Dialect;
  /** Subscribe to a NOTIFY channel; resolves once listening. The returned function unsubscribes. */
  listen(channel: string, fn: Listener): Promise<() => Promise<void>>;
  notify(channel: string, payload?: string): Promise<void>;
  /**
   * Whether no other process listens on this database now (listener-presence.ts): a statement about to commit
   * may leave its NOTIFY out and have `deliverLocally` announce it after the commit. Absent on PGlite.
   */
  alone?(): boolean;
  /** Delivers `notifies` to this process's own listeners in memory (asynchronously), whoever else listens. */
  deliverLocally?(notifies: readonly Notification[]): void;
  /**
   * A pool of its own (`max` connections, PostgreSQL only) for work that must never queue behind the shared
   * pool's transactions — the session relay, which such a transaction may be waiting on. Its caller
   * destroys it. Absent on PGlite (one connection: every channel is local there).
   */
  separatePool?(max: number): Kysely<Database>;
  close(): Promise<void>;
  /** How long opening took (set by openDatabase): for the startup log. */
  startup?: StartupTimings;
}

export interface StartupTimings {
  /** Open the pool / start PGlite (on a fresh data dir this includes its initdb). */
  openMs: number;
  /** Bring the schema to latest (a two-query check when it already is). */
  migrateMs: number;
  /** Migrations applied by this start. */
  applied: string[];
}

export interface OpenDatabaseOptions {
  databaseUrl?: string;
  /** PGlite data directory; absent → in-memory. Ignored with databaseUrl. */
  dataDir?: string;
  /** pg pool size (default 10). */
  poolSize?: number;
  /** Run migrations to latest (default true). */
  migrate?: boolean;
  /** Use this PGlite instance (e.g. a clone of a migrated template in tests). */
  pglite?: PGlite;
}

// int8 → string stays (numeric() parses); timestamptz → Date is pg's default.

export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<LedgerDatabase> {
  const t0 = performance.now();
  const handle = options.databaseUrl
    ? await openPostgres(options.databaseUrl, options.poolSize ?? 10)
    : await openPglite(options.pglite ?? (options.dataDir ? new PGlite(options.dataDir) : new PGlite()));
  const t1 = performance.now();
  let applied: string[] = [];
  if (options.migrate !== false) {
    try {
      applied = await migrateToLatest(handle.db);
    } catch (e) {
      await handle.close();
      throw e;
    }
  }
  const ms = (a: number, b: number) => Math.round(b - a);
  handle.startup = { openMs: ms(t0, t1), migrateMs: ms(t1, performance.now()), applied };
  return handle;
}

/** Names of the applied migrations, or null when the migration table does not exist yet. */
async function appliedMigrations(db: Kysely<Database>): Promise<string[] | null> {
  const { rows } = await sql<{ t: string | null }>`SELECT to_regclass('kysely_migration')::text AS t`.execute(
    db,
  );
  if (!rows[0]?.t) return null;
  const names = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(db);
  return names.rows.map((r) => r.name);
}

/**
 * Migrate to latest; returns the names applied. When the database already holds exactly the known
 * migrations, the Migrator (its lock table, lock and bookkeeping round trips) is skipped entirely.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const known = Object.keys(await migrationProvider.getMigrations()).sort();
  const present = await appliedMigrations(db);
  if (present && present.length === known.length && [...present].sort().every((n, i) => n === known[i])) {
    return [];
  }
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error : new Error(String(error ?? failed?.migrationName));
    throw new Error(`ledger migration failed: ${cause.message}`, { cause });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Bounds on waiting for the database, so no request hangs past ~5 s while it is away. */
export const PG_TIMEOUTS = {
  /** Waiting for a pool connection (a new one, or a free one): then the request fails 503. */
  connectMs: 3_000,
  /** Server-side bound on one statement. */
  statementMs: 4_000,
  /** The LISTEN connection's reconnect backoff, first and longest. */
  reconnectMs: [250, 2_000] as const,
} as const;

function newPool(url: string, max: number, onConnect?: (c: pg.PoolClient) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: PG_TIMEOUTS.connectMs,
    statement_timeout: PG_TIMEOUTS.statementMs,
    keepAlive: true,
    // Connections are kept (no idle timeout): a closed one would come back cold (warm-pool.ts).
    idleTimeoutMillis: 0,
  });
  pool.on('error', () => {
    /* idle client errors surface on the next query */
  });
  pool.on('connect', (c) => {
    // pg-pool listens for 'error' only while a client is idle: a checked-out client whose connection the
    // server terminates (57P01 on restart, pg_terminate_backend) would emit an unhandled 'error' and end the
    // process. Its query rejects anyway (→ 503 database_unavailable), and pg-pool drops the broken client
    // when it is released.
    c.on('error', () => undefined);
    onConnect?.(c);
  });
  return pool;
}

async function openPostgres(url: string, max: number): Promise<LedgerDatabase> {
  const warmth = new ConnectionWarmth();
  const pool = newPool(url, max, (c) =>
    prepareMarkedStatements(c, (text, values) => warmth.note(c, text, values)),
  );
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: warmingPool(pool, warmth) }) });
  let client: pg.Client | null = null;
  const channels = new Map<string, Set<Listener>>();
  // This process's LISTEN connection is named so; the others' tell whether anyone else listens.
  const listenerName = `${LISTENER_PREFIX}${randomBytes(8).toString('hex')}`;
  const presence = new ListenerPresence(db, listenerName);
  const deliver = (channel: string, payload: string) => {
    for (const fn of channels.get(channel) ?? []) fn(payload);
  };
  // Asynchronously, as a notification arrives: never inside the caller's own code path.
  const deliverLocally = (notifies: readonly Notification[]) =>
    queueMicrotask(() => {
      for (const n of notifies) {
        if (typeof n === 'string') deliver(n, '');
        else deliver(n[0], n[1]);
      }
    });
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let backoff: number = PG_TIMEOUTS.reconnectMs[0];

  // The LISTEN connection: when it breaks (the server restarted), it reconnects by itself with backoff and
  // LISTENs again on every channel; the wake loops' poll fallback covers the gap.
  const lost = (c: pg.Client) => {
    if (client === c) client = null;
    c.end().catch(() => undefined);
    if (channels.size > 0) lostRetry();
  };
  const lostRetry = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      ensureClient().then(
        () => {
          backoff = PG_TIMEOUTS.reconnectMs[0];
        },
        () => {
          backoff = Math.min(backoff * 2, PG_TIMEOUTS.reconnectMs[1]);
          lostRetry();
        },
      );
    }, backoff);
    retry.unref?.();
  };

  const ensureClient = async (): Promise<pg.Client> => {
    if (client) return client;
    if (connecting) return connecting;
    connecting = (async () => {
      const c = new pg.Client({
        connectionString: url,
        connectionTimeoutMillis: PG_TIMEOUTS.connectMs,
        keepAlive: true,
        application_name: listenerName,
      });
      c.on('notification', (n) => deliver(n.channel, n.payload ?? ''));
      c.on('error', () => lost(c));
      c.on('end', () => lost(c));
      try {
        await c.connect();
        for (const channel of channels.keys()) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (e) {
        c.end().catch(() => undefined);
        throw e;
      }
      if (closed) {
        await c.end().catch(() => undefined);
        throw new Error('database closed');
      }
      client = c;
      return c;
    })();
    try {
      return await connecting;
    } finally {
      connecting = null;
    }
  };

  return {
    db,
    dialect: 'postgres',
    async listen(channel, fn) {
      let set = channels.get(channel);
      if (!set) {
        set = new Set();
        channels.set(channel, set);
        try {
          const c = await ensureClient();
          await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        } catch (e) {
          channels.delete(channel);
          throw e;
        }
      }
      set.add(fn);
      presence.start(); // a process that listens looks for others (one that does not always NOTIFYs)
      const mine = set;
      return async () => {
        mine.delete(fn);
      };
    },
    async notify(channel, payload = '') {
      await sql`SELECT pg_notify(${channel}, ${payload})`.execute(db);
    },
    alone: () => presence.alone,
    deliverLocally,
    separatePool(n) {
      return new Kysely<Database>({ dialect: new PostgresDialect({ pool: newPool(url, n) }) });
    },
    async close() {
      closed = true;
      presence.stop();
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      if (c) await c.end().catch(() => undefined);
      await db.destroy();
    },
  };
}

async function openPglite(pglite: PGlite): Promise<LedgerDatabase> {
  await pglite.waitReady;
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    dialect: 'pglite',
    async listen(channel, fn) {
      const unlisten = await pglite.listen(channel, fn);
      return async () => {
        await unlisten();
      };
    },
    async notify(channel, payload = '') {
      await sql`SELECT pg_notify(${channel}, ${payload})`.execute(db);
    },
    async close() {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
  };
}
