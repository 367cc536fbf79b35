// Warm pooled connections (issue 14, the latency tail). A PostgreSQL backend plans each hot statement cold on
// its first use (relation, index, statistics and operator caches load per connection: 5–15 ms for a claim or
// create statement on a quiet machine, 30–100 ms on a busy one) and then plans it again, custom, on each of
// its next four uses (≈ 1.5–4 ms each) before it settles on the cached generic plan (≈ 0.1 ms). A pool of ten
// connections pays that sixty times over (ten connections × six hot statements), spread over its first
// minutes of low-load traffic, on whichever request lands on a connection still learning. So every hot
// (marked) statement's text and last parameters are remembered, and a connection that comes back to the pool
// lacking any of them is held back and warmed first, off every request's path (the request that released it
// has its answer already): the statement is PREPAREd under the name the pool would give it and planned six
// times with `EXPLAIN EXECUTE` — five custom plans and the generic one, exactly what its first six real
// executions would do, but nothing is executed: no row, lock or NOTIFY is touched. Its first real use then
// binds the cached generic plan. Where that cannot be done (parameters that are not plain scalars), a plain
// `EXPLAIN` still loads the caches. A warm-up that fails is dropped; the statement then learns the cold way.
// A warm-up never keeps a request waiting: after a burst every connection comes back lacking and warms at once,
// so a request arriving then found none idle and waited in the pool's queue for a whole warm-up (≈ 25 plans;
// the latency bench's warming p99 ≈ 190 ms on a quiet machine). Now a request that finds no idle connection
// stops the latest warm-up after its current statement and takes that connection; what it had not warmed is
// learned in use or warmed on its next release. (Warming one connection at a time instead, tried twice, left
// more planning on request paths: the cold connections were used before their turn.)
// Only a statement that recurs is warmed: one that has run PLANS_TO_GENERIC times in this process (what a warm-up
// plans it on one connection). A rare one (the runner's claim while no runner claims: three runs in a 1,000-run
// round) was PREPAREd and planned six times on every other pooled connection at its first use — nine warm-ups
// of the largest statement, 0.3–0.8 s of backend CPU — to save plans it would mostly never make there.
import pg from 'pg';
import { statementName } from './prepared.js';

/** Hot statements remembered at most (distinct texts: a marker used with another shape is another text). */
const MAX_HOT = 32;
/** PostgreSQL's plan cache builds custom plans for a statement's first five executions, then the generic one. */
const PLANS_TO_GENERIC = 6;

type Values = readonly unknown[] | undefined;
type Scalar = string | number | boolean | bigint | null;

/** Which hot statements each connection has planned, and the texts (with parameters) to warm the rest. */
export class ConnectionWarmth {
  readonly #hot = new Map<string, Values>();
  /** Runs of each marked statement not hot yet (bounded like the hot ones). */
  readonly #runs = new Map<string, number>();
  readonly #planned = new WeakMap<object, Set<string>>();
  readonly #hotAfter: number;
  /** Statements warmed (tests, tooling): `named` reached their generic plan, `explained` loaded caches only. */
  readonly stats = { named: 0, explained: 0, failed: 0 };

  /** `hotAfter`: runs of a marked statement (in this process) before other connections are warmed with it. */
  constructor(opts: { hotAfter?: number } = {}) {
    this.#hotAfter = opts.hotAfter ?? PLANS_TO_GENERIC;
  }

  /** A marked statement ran on `client`: that connection has planned it; recurring, it is hot. */
  note(client: object, text: string, values: Values): void {
    this.#plannedBy(client).add(text);
    if (!this.#hot.has(text)) {
      const runs = (this.#runs.get(text) ?? 0) + 1;
      if (runs < this.#hotAfter) {
        if (this.#runs.has(text) || this.#runs.size < 4 * MAX_HOT) this.#runs.set(text, runs);
        return;
      }
      this.#runs.delete(text);
    }
    if (this.#hot.has(text) || this.#hot.size < MAX_HOT) this.#hot.set(text, values);
  }

  /** Does `client` lack a hot statement? */
  lacks(client: object): boolean {
    const planned = this.#planned.get(client);
    if (!planned) return this.#hot.size > 0;
    for (const text of this.#hot.keys()) if (!planned.has(text)) return true;
    return false;
  }

  /**
   * Plan every hot statement `client` lacks (nothing is executed); failures are dropped. `stop` is asked before
   * each statement: once it says so, the rest stay unplanned (still lacking).
   */
  async warm(client: pg.PoolClient, stop: () => boolean = () => false): Promise<void> {
    const planned = this.#plannedBy(client);
    for (const [text, values] of [...this.#hot]) {
      if (planned.has(text)) continue;
      if (stop()) return;
      planned.add(text);
      try {
        if (await prepareToGeneric(client, text, values)) this.stats.named += 1;
        else {
          await client.query(`EXPLAIN (COSTS OFF) ${text}`, values ? [...values] : []);
          this.stats.explained += 1;
        }
      } catch {
        this.stats.failed += 1; // not plannable any more: it learns on its first real use
      }
    }
  }

  #plannedBy(client: object): Set<string> {
    let s = this.#planned.get(client);
    if (!s) {
      s = new Set();
      this.#planned.set(client, s);
    }
    return s;
  }
}

/** pg's record of the named statements it has parsed on a connection (it skips Parse for those). */
function parsedStatements(client: pg.PoolClient): Record<string, string> | null {
  const conn = (client as unknown as { connection?: { parsedStatements?: unknown } }).connection;
  const p = conn?.parsedStatements;
  return typeof p === 'object' && p !== null ? (p as Record<string, string>) : null;
}

const isScalar = (v: unknown): v is Scalar =>
  v === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof v);

/** A parameter as the text pg would send for it (scalars; arrays as `{…}` literals), or undefined. */
export function paramText(v: unknown): string | null | undefined {
  if (v === null) return null;
  if (isScalar(v)) return String(v);
  if (!Array.isArray(v)) return undefined;
  const items: string[] = [];
  for (const item of v) {
    if (Array.isArray(item)) {
      const inner = paramText(item);
      if (inner === undefined || inner === null) return undefined;
      items.push(inner);
    } else if (item === null || item === undefined) items.push('NULL');
    else if (isScalar(item)) items.push(`"${String(item).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
    else return undefined;
  }
  return `{${items.join(',')}}`;
}

/**
 * PREPARE the marked `text` under the pool's name for it and plan it to its generic plan with EXPLAIN EXECUTE
 * (parameters as literals of the text pg would send, coerced to the statement's parameter types as a bind would). False when it cannot.
 */
async function prepareToGeneric(client: pg.PoolClient, text: string, values: Values): Promise<boolean> {
  const name = statementName(text);
  const parsed = parsedStatements(client);
  const params = (values ?? []).map(paramText);
  if (!name || !parsed || parsed[name] !== undefined || params.some((p) => p === undefined)) return false;
  await client.query(`PREPARE ${pg.escapeIdentifier(name)} AS ${text}`);
  parsed[name] = text; // the pool's next use of this text binds it without a Parse
  await client.query(planToGenericSql(name, params));
  return true;
}

/**
 * The plans of `PLANS_TO_GENERIC` executions of the prepared statement `name`, in one round trip: a DO block
 * runs its `EXPLAIN EXECUTE` that many times and drops the plan texts where they are made (each is 10–20 kB
 * for a hot statement: sent back and parsed for nothing, six times per statement and connection, they were
 * most of a warm-up's cost to this process). Nothing is executed; PostgreSQL counts each EXPLAIN EXECUTE
 * toward the statement's custom/generic choice as it does a real execution.
 */
export function planToGenericSql(name: string, params: readonly (string | null | undefined)[]): string {
  const args = params.map((v) => (v === null || v === undefined ? 'NULL' : pg.escapeLiteral(v)));
  const explain = `EXPLAIN (COSTS OFF) EXECUTE ${pg.escapeIdentifier(name)}${args.length > 0 ? `(${args.join(', ')})` : ''}`;
  let tag = '$warm$';
  for (let i = 0; explain.includes(tag); i++) tag = `$warm${i}$`;
  return `DO ${tag} DECLARE r record; BEGIN FOR i IN 1..${PLANS_TO_GENERIC} LOOP FOR r IN EXECUTE ${pg.escapeLiteral(explain)} LOOP END LOOP; END LOOP; END ${tag}`;
}

/**
 * The pool as kysely sees it: a checked-out client that lacks a hot statement warms itself on release, before
 * it is reused — unless a request is waiting for a connection (then it learns the cold way, in use). A request
 * that finds no idle connection stops the latest warm-up after its current statement and gets its connection.
 */
export function warmingPool(pool: pg.Pool, warmth: ConnectionWarmth) {
  const warming: { stop: boolean }[] = [];
  return {
    async connect(): Promise<pg.PoolClient> {
      if (pool.idleCount === 0) {
        const latest = [...warming].reverse().find((w) => !w.stop);
        if (latest) latest.stop = true;
      }
      const client = await pool.connect();
      const release = client.release;
      client.release = (err?: Error | boolean) => {
        // A request already waiting for a connection gets this one now: warming never delays anyone.
        if (err || pool.waitingCount > 0 || !warmth.lacks(client)) return release(err);
        const w = { stop: false };
        warming.push(w);
        void warmth
          .warm(client, () => w.stop)
          .finally(() => {
            warming.splice(warming.indexOf(w), 1);
            release();
          });
      };
      return client;
    },
    end: () => pool.end(),
  };
}
