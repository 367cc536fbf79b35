// Vacuums the ledger's tables when nothing else does. Every run leaves dead row versions behind it: its queue
// entry and lease are inserted and deleted, its slot and run row updated. PostgreSQL's autovacuum clears them;
// where it does not run — PGlite (one process: no autovacuum worker, whatever `SHOW autovacuum` says) or a
// server with `autovacuum = off` — they pile up, and every claim, settle and sweep walks them: on PostgreSQL with
// `autovacuum = off`, the http shape (bench/vacuum.mjs), the backends' CPU per run rose from 0.79 to 1.45 ms over
// 25,000 runs, and kept rising. (On PGlite, one backend, 24,000 runs showed no such growth with the keeper or
// without — bench/growth-pglite.mjs; it keeps there all the same, by the same rule.)
//
// So this keeper does autovacuum's part of the work with autovacuum's own rule: every `checkMs` it reads the
// cumulative statistics (`pg_stat_user_tables`, one query) and runs one `VACUUM (SKIP_LOCKED)` of the tables of
// this schema (those its role may vacuum: its own) whose dead row versions reached `minDead` + `scale` × live
// ones. SKIP_LOCKED: a table another replica is vacuuming right now is skipped, never waited for. Nothing is
// ANALYZEd (an ANALYZE replans every hot statement on every pooled connection; the queue's own statistics are
// queue-stats.ts's), but a VACUUM sets the table's size in `pg_class` too: the queue's new size is handed to
// QueueStats so it still knows what the planner saw.
//
// Off the request path: the statistics query and the VACUUM run on the pool like any statement (on PGlite, one
// connection: a VACUUM waits for the transaction in flight, and the next statement waits for it). A failure is
// logged (once until a look succeeds again) and the next look tries again; one the role can never get past
// (`insufficient_privilege`) stops the keeper.
//
// Dead row versions come from writes. Alone on its database (db/fallback-poll.ts) the keeper looks at the tick
// after a fact was heard (`nudge`: a run created, started or settled), otherwise once per `aloneMs`: writes that
// announce nothing (a heartbeat, a session channel's touch) leave a few dead rows a second, far below `minDead`.
import { type QueryExecutorProvider, sql } from 'kysely';
import type { Dialect } from './database.js';
import { type FallbackPoll, NudgedLooks } from './fallback-poll.js';
import type { QueueStats } from './queue-stats.js';

export interface VacuumOptions {
  /** Between looks at the statistics (default 2,000 ms). */
  checkMs?: number;
  /** Dead row versions a table needs before it is vacuumed, whatever its size (default 1,000). */
  minDead?: number;
  /** … plus this fraction of its live rows (default 0.2, autovacuum's `autovacuum_vacuum_scale_factor`). */
  scale?: number;
  /**
   * `auto` (default): only where no autovacuum runs (PGlite; PostgreSQL with `autovacuum = off`). `always`:
   * whatever the server does (tests on a server that runs autovacuum).
   */
  mode?: 'auto' | 'always';
  /** Which ticks look (db/fallback-poll.ts; default: every one). */
  fallback?: Pick<FallbackPoll, 'alone' | 'aloneMs'>;
}

/** What the server says of its autovacuum: its setting, and whether it counts dead rows at all. */
export interface AutovacuumSettings {
  dialect: Dialect;
  autovacuum: string;
  trackCounts: string;
}

/** Why the keeper vacuums or not, given the server: `null` = it should vacuum. */
export function keeperIdleReason(s: AutovacuumSettings, mode: 'auto' | 'always'): string | null {
  // Without counts there are no dead-row statistics to go by (and autovacuum has none either).
  if (s.trackCounts !== 'on') return 'track_counts is off: no dead-row statistics';
  if (mode === 'always' || s.dialect === 'pglite') return null;
  return s.autovacuum === 'on' ? 'the server runs autovacuum' : null;
}

/** Autovacuum's rule: a table is due once its dead rows reach `minDead` + `scale` × its live rows. */
export function vacuumDue(live: number, dead: number, o: { minDead: number; scale: number }): boolean {
  return dead >= o.minDead + o.scale * live;
}

interface TableStats {
  schema: string;
  table: string;
  live: number;
  dead: number;
}

export class VacuumKeeper {
  readonly #db: QueryExecutorProvider;
  readonly #dialect: Dialect;
  readonly #stats: QueueStats | undefined;
  readonly #log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  readonly #checkMs: number;
  readonly #rule: { minDead: number; scale: number };
  readonly #mode: 'auto' | 'always';
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #looks: NudgedLooks;
  #inFlight: Promise<void> | null = null;
  #stopped = false;
  /** The last look failed (its failure was logged; the next ones are not, until one succeeds). */
  #failing = false;
  /** VACUUM statements run (tests, tooling). */
  vacuums = 0;
  /** Tables a VACUUM was run for, by name, with how many times (SKIP_LOCKED may have skipped one of them). */
  readonly vacuumed = new Map<string, number>();
  /** Why the keeper does nothing on this server (after start()), or null while it keeps. */
  idleReason: string | null = null;

  constructor(
    db: QueryExecutorProvider,
    dialect: Dialect,
    log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void,
    options: VacuumOptions = {},
    queueStats?: QueueStats,
  ) {
    this.#db = db;
    this.#dialect = dialect;
    this.#log = log;
    this.#stats = queueStats;
    this.#checkMs = options.checkMs ?? 2_000;
    this.#rule = { minDead: options.minDead ?? 1_000, scale: options.scale ?? 0.2 };
    this.#mode = options.mode ?? 'auto';
    this.#looks = new NudgedLooks(options.fallback, this.#checkMs);
  }

  /** A fact was heard (core.ts): the next tick looks, alone or not. */
  nudge(): void {
    this.#looks.nudge();
  }

  /** Ticks that did not look (alone and quiet: a recorded refusal, for tests and figures). */
  get skippedLooks(): number {
    return this.#looks.skipped;
  }

  /** Asks the server whether it vacuums by itself; if not, starts looking every `checkMs`. */
  async start(): Promise<void> {
    const { rows } = await sql<{ autovacuum: string; track_counts: string }>`
      SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts`.execute(
      this.#db,
    );
    const settings = {
      dialect: this.#dialect,
      autovacuum: rows[0]?.autovacuum ?? 'on',
      trackCounts: rows[0]?.track_counts ?? 'off',
    };
    this.idleReason = keeperIdleReason(settings, this.#mode);
    if (this.idleReason !== null) return;
    this.#log('info', 'no autovacuum on this database: the control plane vacuums its tables', {
      dialect: this.#dialect,
      checkMs: this.#checkMs,
      ...this.#rule,
    });
    this.#timer = setInterval(() => {
      if (this.#looks.look()) void this.check();
    }, this.#checkMs);
    this.#timer.unref?.();
  }

  /** One look (the timer's; tests call it): vacuums the tables due. Never throws. */
  check(): Promise<void> {
    if (this.#inFlight || this.#stopped) return this.#inFlight ?? Promise.resolve();
    this.#inFlight = this.#check().finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  /** Stops looking and waits for a VACUUM in flight (before the database closes). */
  async stop(): Promise<void> {
    this.#halt();
    await this.#inFlight;
  }

  async #check(): Promise<void> {
    try {
      await this.#vacuumDue();
      this.#failing = false;
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code === '42501') {
        this.idleReason = 'the role may not vacuum these tables';
        this.#log('warn', 'vacuum refused: the control plane stops vacuuming', { error: String(e) });
        this.#halt();
        return;
      }
      // Once per spell of failures (a database outage would otherwise log every look).
      if (!this.#failing) this.#log('warn', 'vacuum failed', { error: String(e) });
      this.#failing = true;
    }
  }

  async #vacuumDue(): Promise<void> {
    const due = await this.#due();
    if (due.length === 0 || this.#stopped) return;
    const tables = sql.join(due.map((t) => sql.id(t.schema, t.table)));
    await sql`VACUUM (SKIP_LOCKED) ${tables}`.execute(this.#db);
    this.vacuums += 1;
    for (const t of due) this.vacuumed.set(t.table, (this.vacuumed.get(t.table) ?? 0) + 1);
    if (due.some((t) => t.table === 'adm_queue')) await this.#queueSize();
  }

  /** No look from now on (the timer cleared); a look in flight finishes. */
  #halt(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #due(): Promise<TableStats[]> {
    const { rows } = await sql<{
      schema: string;
      table: string;
      live: string | number;
      dead: string | number;
    }>`
      SELECT s.schemaname AS schema, s.relname AS table, s.n_live_tup AS live, s.n_dead_tup AS dead
      FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema() AND s.n_dead_tup >= ${this.#rule.minDead}::int
        AND pg_has_role(c.relowner, 'USAGE')
      ORDER BY s.relname`.execute(this.#db);
    return rows
      .map((r) => ({ schema: r.schema, table: r.table, live: Number(r.live), dead: Number(r.dead) }))
      .filter((t) => vacuumDue(t.live, t.dead, this.#rule));
  }

  /** The queue's size as the VACUUM left it in `pg_class`, handed to QueueStats. */
  async #queueSize(): Promise<void> {
    if (!this.#stats) return;
    const { rows } = await sql<{ n: number }>`
      SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'adm_queue'::regclass`.execute(this.#db);
    this.#stats.sawSize(Number(rows[0]?.n ?? 0));
  }
}
