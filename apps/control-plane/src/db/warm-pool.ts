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
// ONE connection warms at a time (≈ 25 plans, 100+ ms of a backend's CPU each): after a burst every pooled
// connection comes back lacking at once, and ten warming together took both cores from the requests that
// followed — and, all ten held back, made those requests wait for a connection (the latency bench's warming
// p99 ≈ 190 ms on a quiet machine). The others are held back in turn, out of the pool's idle list, so requests
// keep using the warm connections (the pool hands out its most recently released idle one); a request that
// finds none idle takes a held one, cold, at once.
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
  readonly #planned = new WeakMap<object, Set<string>>();
  /** Statements warmed (tests, tooling): `named` reached their generic plan, `explained` loaded caches only. */
  readonly stats = { named: 0, explained: 0, failed: 0 };
  /** A connection is warming now (one at a time). */
  busy = false;

  /** A marked statement ran on `client`: it is hot, and that connection has planned it. */
  note(client: object, text: string, values: Values): void {
    if (this.#hot.has(text) || this.#hot.size < MAX_HOT) this.#hot.set(text, values);
    this.#plannedBy(client).add(text);
  }

  /** Does `client` lack a hot statement? */
  lacks(client: object): boolean {
    const planned = this.#planned.get(client);
    if (!planned) return this.#hot.size > 0;
    for (const text of this.#hot.keys()) if (!planned.has(text)) return true;
    return false;
  }

  /** Plan every hot statement `client` lacks (nothing is executed); failures are dropped. */
  async warm(client: pg.PoolClient): Promise<void> {
    const planned = this.#plannedBy(client);
    for (const [text, values] of [...this.#hot]) {
      if (planned.has(text)) continue;
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
  const args = params.map((v) => (v === null || v === undefined ? 'NULL' : pg.escapeLiteral(v)));
  const explain = `EXPLAIN (COSTS OFF) EXECUTE ${pg.escapeIdentifier(name)}${args.length > 0 ? `(${args.join(', ')})` : ''}`;
  for (let i = 0; i < PLANS_TO_GENERIC; i++) await client.query(explain);
  return true;
}

/**
 * The pool as kysely sees it: a checked-out client that lacks a hot statement warms itself on release, before
 * it is reused — unless a request is waiting for a connection (then it learns the cold way, in use). One warms
 * at a time: one released while another warms is held back (out of the pool) for its turn; a request that
 * finds no idle connection takes a held one at once, cold, rather than wait for a warm-up.
 */
export function warmingPool(pool: pg.Pool, warmth: ConnectionWarmth) {
  type Held = { client: pg.PoolClient; release: (err?: Error | boolean) => void };
  const held: Held[] = [];
  const handOver = () => held.pop()?.release();
  /** Warm `first`, then the held ones in turn, each released once warmed; a waiting request stops it. */
  const inTurn = async (first: Held) => {
    warmth.busy = true;
    try {
      for (let next: Held | undefined = first; next; next = held.shift()) {
        await warmth.warm(next.client);
        next.release();
        if (pool.waitingCount > 0) while (held.length > 0) handOver();
      }
    } finally {
      warmth.busy = false;
    }
  };
  return {
    async connect(): Promise<pg.PoolClient> {
      if (pool.idleCount === 0 && held.length > 0) handOver();
      const client = await pool.connect();
      const release = client.release;
      client.release = (err?: Error | boolean) => {
        // A request already waiting for a connection gets this one now: warming never delays anyone.
        if (err || pool.waitingCount > 0 || !warmth.lacks(client)) return release(err);
        if (warmth.busy) held.push({ client, release });
        else void inTurn({ client, release });
      };
      return client;
    },
    end: () => {
      while (held.length > 0) handOver();
      return pool.end();
    },
  };
}
