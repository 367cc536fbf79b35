// Pooled connections warm themselves on release (src/db/warm-pool.ts): a connection that comes back lacking a
// hot statement another connection ran gets it PREPAREd and planned to its generic plan — nothing executed —
// so its first real use binds the cached plan. Live PostgreSQL only (PGlite has no pool).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared, prepareMarkedStatements } from '../src/db/prepared.js';
import { ConnectionWarmth, paramText, warmingPool } from '../src/db/warm-pool.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/warm-pool.pg.test.ts');

const until = async (check: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 2_000 && !(await check()); i++) await new Promise((r) => setTimeout(r, 5));
  expect(await check()).toBe(true);
};

/**
 * A pool of two kept connections. With an 'error' listener, as the shipped pool has (src/db/database.ts):
 * pool.end() resolves once its clients were told to end, not when their connections closed, so the
 * database's DROP … WITH (FORCE) after it can terminate one still closing — pg-pool re-emits that as the
 * pool's 'error', which without a listener is an uncaught exception (it failed CI once).
 */
function keptPool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 2, idleTimeoutMillis: 0 });
  p.on('error', () => undefined);
  return p;
}

describe.runIf(LIVE_PG)('warm pool', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let pool: pg.Pool;
  let warmth: ConnectionWarmth;
  let wp: ReturnType<typeof warmingPool>;
  const INSERT = `${prepared('probe_insert')} INSERT INTO probe (v, tags) VALUES ($1::int, $2::text[]) RETURNING v`;
  const plans = async (c: pg.PoolClient) =>
    (
      await c.query<{ generic: string; custom: string }>(
        "SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE name LIKE 'probe_insert_%'",
      )
    ).rows;

  beforeAll(async () => {
    live = await createLiveDatabase();
    pool = keptPool(live.url);
    warmth = new ConnectionWarmth({ hotAfter: 1 }); // warmed from its first run (the rule is tested below)
    pool.on('connect', (c) => prepareMarkedStatements(c, (text, values) => warmth.note(c, text, values)));
    wp = warmingPool(pool, warmth);
    const c = await wp.connect();
    await c.query('CREATE TABLE probe (v int, tags text[])');
    c.release();
  }, 60_000);

  afterAll(async () => {
    // A failed test may leave a client checked out; pool.end() would wait for it forever.
    await Promise.race([pool?.end(), new Promise((r) => setTimeout(r, 5_000))]);
    await live?.drop();
  });

  it('plans a hot statement to its generic plan on a connection that lacks it, executing nothing', async () => {
    const a = await wp.connect();
    const b = await wp.connect();
    expect((await a.query(INSERT, [1, ['x', 'y "z"']])).rows).toEqual([{ v: 1 }]);
    a.release();
    b.release(); // lacks the insert: held back and warmed before it is idle again
    await until(() => pool.idleCount === 2);
    expect(warmth.stats.named).toBe(1);
    const c1 = await wp.connect();
    const c2 = await wp.connect();
    const warmed = (await plans(c1)).length === 1 && (await plans(c1))[0]?.custom === '5' ? c1 : c2;
    expect(await plans(warmed)).toEqual([{ generic: '1', custom: '5' }]);
    // Nothing was executed by the warm-up: only the real insert's row.
    expect((await warmed.query('SELECT count(*)::int AS n FROM probe')).rows).toEqual([{ n: 1 }]);
    // Its first real use binds the cached generic plan (no second Parse, no custom plan).
    expect((await warmed.query(INSERT, [2, ['w']])).rows).toEqual([{ v: 2 }]);
    expect(await plans(warmed)).toEqual([{ generic: '2', custom: '5' }]);
    c1.release();
    c2.release();
    await until(() => pool.idleCount === 2);
    expect(warmth.stats.named).toBe(1); // both have it now: no more warm-ups
  });

  it('drops a warm-up that fails and still returns the connection; an errored release is not warmed', async () => {
    const a = await wp.connect();
    const b = await wp.connect();
    const gone = `${prepared('probe_gone')} SELECT v FROM probe_tmp WHERE v = $1::int`;
    await a.query('CREATE TABLE probe_tmp (v int)');
    await a.query(gone, [1]);
    await a.query('DROP TABLE probe_tmp');
    a.release();
    b.release();
    await until(() => pool.idleCount === 2);
    expect(warmth.stats.failed).toBe(1);
    const c = await wp.connect();
    const before = { ...warmth.stats };
    c.release(new Error('broken'));
    expect(pool.totalCount).toBe(1);
    expect(warmth.stats).toEqual(before);
  });

  it('hands a released connection straight to a waiting request instead of warming it', async () => {
    const a = await wp.connect();
    const b = await wp.connect();
    await a.query(`${prepared('probe_wait')} SELECT $1::int AS v`, [1]);
    const waiting = wp.connect(); // the pool is full: this one waits
    await until(() => pool.waitingCount === 1);
    const before = { ...warmth.stats };
    b.release();
    const c = await waiting;
    expect(c).toBe(b);
    expect(warmth.stats).toEqual(before);
    a.release();
    c.release(); // nobody waits now: warmed on this release (a new connection: the insert and this one)
    await until(() => pool.idleCount === 2);
    expect(warmth.stats.named).toBe(before.named + 2);
  });

  it('a request that finds no idle connection stops the latest warm-up after its current statement', async () => {
    const p2 = keptPool(live.url);
    const w2 = new ConnectionWarmth({ hotAfter: 1 });
    p2.on('connect', (c) => prepareMarkedStatements(c, (text, values) => w2.note(c, text, values)));
    const wp2 = warmingPool(p2, w2);
    try {
      const [a, b] = [await wp2.connect(), await wp2.connect()];
      for (const n of ['one', 'two', 'three'])
        await a.query(`${prepared(`probe_${n}`)} SELECT v FROM probe WHERE v = $1::int`, [1]);
      b.release(); // lacks all three: warming
      const got = await wp2.connect(); // none idle, the pool is full: b, after its first statement
      expect(got).toBe(b);
      expect(w2.stats.named).toBe(1);
      expect(w2.lacks(got)).toBe(true);
      got.release(); // warmed on this release: the other two
      a.release();
      await until(() => p2.idleCount === 2 && w2.stats.named === 3);
      const [c1, c2] = [await wp2.connect(), await wp2.connect()];
      expect(w2.lacks(c1) || w2.lacks(c2)).toBe(false);
      c1.release();
      c2.release();
    } finally {
      await p2.end();
    }
  });

  it('warms other connections with a statement only once it recurs (six runs: what one warm-up plans)', async () => {
    const p3 = keptPool(live.url);
    const w3 = new ConnectionWarmth();
    p3.on('connect', (c) => prepareMarkedStatements(c, (text, values) => w3.note(c, text, values)));
    const wp3 = warmingPool(p3, w3);
    const rare = `${prepared('probe_rare')} SELECT v FROM probe WHERE v = $1::int`;
    try {
      const [a, b] = [await wp3.connect(), await wp3.connect()];
      for (let i = 0; i < 5; i++) await a.query(rare, [i]);
      a.release();
      b.release(); // five runs: not hot, b is not warmed with it
      await until(() => p3.idleCount === 2);
      expect(w3.stats.named).toBe(0);
      expect(w3.lacks(b)).toBe(false);
      const [c, d] = [await wp3.connect(), await wp3.connect()];
      const ran = c === a ? c : d;
      await ran.query(rare, [5]); // the sixth: hot now
      c.release();
      d.release(); // the other connection lacks it: warmed
      await until(() => p3.idleCount === 2 && w3.stats.named === 1);
      expect(w3.lacks(a) || w3.lacks(b)).toBe(false);
    } finally {
      await p3.end();
    }
  });

  it('writes array parameters as pg would send them', () => {
    expect(paramText(['a', 'b "c"', 'd\\e', null])).toBe('{"a","b \\"c\\"","d\\\\e",NULL}');
    expect(
      paramText([
        [1, 2],
        [3, 4],
      ]),
    ).toBe('{{"1","2"},{"3","4"}}');
    expect(paramText(new Date(0))).toBeUndefined();
    expect(paramText(7)).toBe('7');
  });
});
