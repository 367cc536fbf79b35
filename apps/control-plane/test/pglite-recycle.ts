// Recycled PGlite instances for test databases. Starting a PGlite from the migrated template (pglite-template.ts)
// costs ≈ 1.5–1.7 s CPU on this machine class and was the bulk of most control-plane tests (a core per test);
// emptying a used instance back to the template's state costs a few tens of ms. A test database handed out
// here is indistinguishable from a fresh one: on close its instance is reset — every table truncated, the
// template's rows copied back, sequences and planner statistics set to the template's, the session discarded
// (settings, LISTENs, prepared statements, temporary objects) — and then checked: its catalog fingerprint
// (relations, columns, functions, triggers, constraints, indexes, rules, types, roles, settings, sequences,
// statistics) must equal the template's, else the instance is closed, never reused. A test that changes the
// schema (DDL, ANALYZE) or leaves a transaction open therefore costs a fresh start, not a polluted database.
// `EVERDICT_TEST_PGLITE_RECYCLE=0` turns recycling off (every test database a fresh PGlite, as before).
import { appendFileSync, writeFileSync } from 'node:fs';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { type Fingerprint, fingerprint, fingerprintDiff, USER_RELS } from './pglite-fingerprint.js';
import { migratedPglite } from './pglite-template.js';

export const RECYCLE_ENV = 'EVERDICT_TEST_PGLITE_RECYCLE';
const MAX_IDLE = 2; // instances kept per worker (a test holding more databases at once starts the extra ones)

interface RelStats {
  oid: number;
  reltuples: number;
  relpages: number;
  relallvisible: number;
}

interface Snapshot {
  /** Every user table, quoted, for one TRUNCATE. */
  tables: string[];
  /** The template's rows of its non-empty tables (COPY text format). */
  seeds: Array<{ table: string; rows: Blob }>;
  sequences: Array<{ name: string; last_value: string | null }>;
  relStats: RelStats[];
  fingerprint: Fingerprint;
  /** One query counting every table's rows, and the template's answer. */
  countQuery: string;
  counts: string;
}

async function rowCounts(pg: PGlite, query: string): Promise<string> {
  if (!query) return '';
  return JSON.stringify((await pg.query(query)).rows);
}

/** What a fresh instance holds (read only: the instance stays pristine). */
async function takeSnapshot(pg: PGlite): Promise<Snapshot> {
  const tables = (
    await pg.query<{ name: string }>(
      `SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind IN ('r', 'p') AND c.oid IN (${USER_RELS}) ORDER BY 1`,
    )
  ).rows.map((r) => r.name);
  const seeds: Snapshot['seeds'] = [];
  for (const table of tables) {
    const { rows } = await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    if ((rows[0]?.n ?? 0) === 0) continue;
    const out = await pg.query(`COPY ${table} TO '/dev/blob'`);
    if (!out.blob) throw new Error(`pglite-recycle: COPY ${table} returned no rows`);
    seeds.push({ table, rows: out.blob });
  }
  const sequences = (
    await pg.query<{ name: string; last_value: string | null }>(
      `SELECT format('%I.%I', schemaname, sequencename) AS name, last_value::text FROM pg_sequences`,
    )
  ).rows;
  const relStats = (
    await pg.query<RelStats>(
      `SELECT oid::int AS oid, reltuples::float8 AS reltuples, relpages, relallvisible FROM pg_class
       WHERE oid IN (${USER_RELS})`,
    )
  ).rows;
  const countQuery = tables.map((t) => `SELECT count(*)::int AS n FROM ${t}`).join(' UNION ALL ');
  return {
    tables,
    seeds,
    sequences,
    relStats,
    fingerprint: await fingerprint(pg),
    countQuery,
    counts: await rowCounts(pg, countQuery),
  };
}

/** Why a returned instance was closed instead of reused. */
export type RejectReason = 'closed' | 'transaction' | 'fingerprint' | 'rows' | 'exception';
type Verdict = { ok: true } | { ok: false; reason: RejectReason; detail: string };

/** Back to the template's state; ok when the instance verifiably is (else it must not be reused). */
async function reset(pg: PGlite, s: Snapshot): Promise<Verdict> {
  if (pg.closed) return { ok: false, reason: 'closed', detail: 'closed by its borrower' };
  try {
    await pg.exec('DISCARD ALL'); // fails inside an open transaction: such an instance is closed, not reused
  } catch (e) {
    const open = /transaction block/.test(String(e));
    return { ok: false, reason: open ? 'transaction' : 'exception', detail: String(e) };
  }
  await pg.transaction(async (tx) => {
    // Ordinary triggers (append-only guards, counters) and foreign-key checks stay off for the restore.
    await tx.exec(`SET LOCAL session_replication_role = replica`);
    if (s.tables.length > 0) await tx.exec(`TRUNCATE ${s.tables.join(', ')} RESTART IDENTITY`);
    for (const seed of s.seeds)
      await tx.query(`COPY ${seed.table} FROM '/dev/blob'`, [], { blob: seed.rows });
    for (const q of s.sequences) {
      await tx.query(
        q.last_value === null
          ? `SELECT setval($1::regclass, 1, false)`
          : `SELECT setval($1::regclass, $2::bigint)`,
        q.last_value === null ? [q.name] : [q.name, q.last_value],
      );
    }
    // Planner statistics (an ANALYZE, e.g. the queue statistics' own) go back to the template's.
    await tx.exec(`DELETE FROM pg_statistic WHERE starelid IN (${USER_RELS})`);
    await tx.query(
      `UPDATE pg_class c SET reltuples = s.reltuples, relpages = s.relpages, relallvisible = s.relallvisible
       FROM jsonb_to_recordset($1::jsonb) AS s(oid int, reltuples float4, relpages int, relallvisible int)
       WHERE c.oid = s.oid::oid AND (c.reltuples, c.relpages, c.relallvisible) IS DISTINCT FROM
         (s.reltuples, s.relpages, s.relallvisible)`,
      [JSON.stringify(s.relStats)],
    );
  });
  await pg.exec('DISCARD ALL');
  const parts = fingerprintDiff(s.fingerprint, await fingerprint(pg));
  if (parts.length > 0) return { ok: false, reason: 'fingerprint', detail: parts.join(',') };
  // Rows too: a write that reached the instance after the truncate (a borrower's query still in flight) fails it.
  if ((await rowCounts(pg, s.countQuery)) !== s.counts)
    return { ok: false, reason: 'rows', detail: 'row counts' };
  return { ok: true };
}

/** What a recycler did: instances started, handed on again, and closed after a failed reset (by reason). */
export interface RecycleStats {
  fresh: number;
  reused: number;
  rejected: Record<RejectReason, number>;
  /** The last rejections' details (newest last, at most 20). */
  rejections: string[];
}

export interface Recycler {
  /** A PGlite holding the migrated, empty ledger; its `close()` hands it back. */
  acquire(): Promise<PGlite>;
  readonly stats: RecycleStats;
  /** Closes the idle instances (the recycler stays usable). */
  drain(): Promise<void>;
}

/** With this set to a file path, the worker recycler appends each rejection to it and writes its counts beside it. */
export const RECYCLE_LOG_ENV = 'EVERDICT_TEST_PGLITE_RECYCLE_LOG';

/** The test file running in this worker (for the log). */
function currentFile(): string {
  const state = (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__;
  return state?.filepath?.replace(/^.*control-plane\//, '') ?? '';
}

/** A pool of reset-and-reused PGlite instances (one per test worker in testDatabase(); tests make their own). */
export function createRecycler(opts: { maxIdle?: number; log?: boolean } = {}): Recycler {
  const maxIdle = opts.maxIdle ?? MAX_IDLE;
  const idle: PGlite[] = [];
  let snapshot: Promise<Snapshot> | null = null;
  const stats: RecycleStats = {
    fresh: 0,
    reused: 0,
    rejected: { closed: 0, transaction: 0, fingerprint: 0, rows: 0, exception: 0 },
    rejections: [],
  };
  const log = (line?: string): void => {
    const file = process.env[RECYCLE_LOG_ENV];
    if (!file || !opts.log) return;
    if (line) appendFileSync(file, `${process.pid} ${line} ${currentFile()}\n`);
    writeFileSync(`${file}.${process.pid}.json`, JSON.stringify(stats));
  };

  async function recycle(pg: PGlite): Promise<void> {
    let verdict: Verdict;
    try {
      verdict = await reset(pg, await (snapshot as Promise<Snapshot>));
    } catch (e) {
      verdict = { ok: false, reason: 'exception', detail: String(e) };
    }
    if (verdict.ok && idle.length < maxIdle) {
      idle.push(pg);
      return;
    }
    if (!verdict.ok) {
      stats.rejected[verdict.reason]++;
      stats.rejections = [...stats.rejections, `${verdict.reason}: ${verdict.detail}`].slice(-20);
      log(`rejected ${verdict.reason}: ${verdict.detail}`);
    }
    if (!pg.closed) await pg.close().catch(() => undefined);
  }

  async function acquire(): Promise<PGlite> {
    if (snapshot === null) {
      // The first instance is measured while pristine, then handed out like any fresh one.
      const first = migratedPglite();
      snapshot = first.then(takeSnapshot);
      await snapshot;
      stats.fresh++;
      log('acquire fresh');
      return leaseView(await first, recycle);
    }
    await snapshot;
    const reused = idle.pop();
    if (reused) stats.reused++;
    else stats.fresh++;
    log(`acquire ${reused ? 'reused' : 'fresh'}`);
    return leaseView(reused ?? (await migratedPglite()), recycle);
  }

  async function drain(): Promise<void> {
    for (const pg of idle.splice(0)) await pg.close().catch(() => undefined);
  }

  return { acquire, stats, drain };
}

/** Whether testDatabase() recycles PGlite instances (see the README's "Tests"). */
export function recycleEnabled(): boolean {
  return process.env[RECYCLE_ENV] !== '0';
}

// Kept on the global object: a file's vi.resetModules() (src/ledger/records.test.ts) re-evaluates this module in
// the worker, and a second recycler would orphan the first one's idle instances.
const WORKER = Symbol.for('everdict.test.pglite-recycler');
/** This worker's recycler (the one testDatabase() uses); its counts are diagnostics, moved by every test file. */
export function workerRecycler(): Recycler {
  const g = globalThis as { [WORKER]?: Recycler };
  g[WORKER] ??= createRecycler({ log: true });
  return g[WORKER];
}

/**
 * A PGlite holding the migrated, empty ledger: a reused one when this worker's recycler has one idle, or a
 * fresh one when recycling is off. Its `close()` hands it back (reset); after that, this handle behaves as a
 * closed PGlite (every call rejects).
 */
export async function recycledPglite(): Promise<PGlite> {
  if (!recycleEnabled()) return migratedPglite();
  return workerRecycler().acquire();
}

type Unsubscribe = () => Promise<void>;

/** The instance as its borrower sees it: close() returns it, LISTENs it left are dropped, later calls reject. */
function leaseView(pg: PGlite, recycle: (pg: PGlite) => Promise<void>): PGlite {
  let released: Promise<void> | null = null;
  const subs = new Set<Unsubscribe>();
  const track = (unsub: Unsubscribe): Unsubscribe => {
    const once = async () => {
      if (!subs.delete(once)) return;
      await unsub();
    };
    subs.add(once);
    return once;
  };
  const close = (): Promise<void> => {
    released ??= (async () => {
      for (const unsub of [...subs]) await unsub().catch(() => undefined);
      await recycle(pg);
    })();
    return released;
  };
  return new Proxy(pg, {
    get(target, prop) {
      if (prop === 'closed') return released !== null || target.closed;
      if (prop === 'close') return close;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (released !== null) return () => Promise.reject(new Error('PGlite is closed'));
      if (prop === 'listen') {
        return async (channel: string, fn: (payload: string) => void, tx?: Transaction) =>
          track(await target.listen(channel, fn, tx));
      }
      if (prop === 'onNotification') {
        return (fn: (channel: string, payload: string) => void) => {
          const off = target.onNotification(fn);
          const tracked = track(async () => off());
          return () => void tracked();
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}
