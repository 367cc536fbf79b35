#!/usr/bin/env node
// Profile: statements, transactions and wall time per run on each phase of the real path (create through the
// API service; then claim/start + inline execute + settle by the dispatch loop), on a live PostgreSQL.
// Counts every query sent by `pg` (pool + listener) by phase and by statement shape. Not a benchmark.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startCore } from '../dist/index.js';

const BASE = process.env.EVERDICT_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const N = Number(process.env.BENCH_RUNS ?? 500);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);

let phase = 'setup';
const stats = new Map();
const orig = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, cb) {
  const text = typeof config === 'string' ? config : (config?.text ?? '');
  const shape = text
    .replace(/\s+/g, ' ')
    .replace(/adm_sp_\d+/, 'adm_sp_N')
    .slice(0, 70);
  const key = `${phase}|${shape}`;
  const s = stats.get(key) ?? { n: 0, ms: 0 };
  stats.set(key, s);
  s.n++;
  const t0 = performance.now();
  const r = orig.call(this, config, values, cb);
  if (r && typeof r.then === 'function')
    r.then(
      () => {
        s.ms += performance.now() - t0;
      },
      () => undefined,
    );
  return r;
};

async function admin(sql) {
  const c = new pg.Client({ connectionString: BASE });
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end();
  }
}
const name = `everdict_prof_${randomBytes(4).toString('hex')}`;
const u = new URL(BASE);
u.pathname = `/${name}`;
await admin(`CREATE DATABASE ${name}`);
const key = `evk_bench_${randomBytes(12).toString('hex')}`;
const policy = { maxQueued: 1_000_000, maxConcurrent: 1_000 };
try {
  const creator = await startCore({
    databaseUrl: u.toString(),
    bootstrapKey: key,
    policy,
    scheduler: { enabled: false },
  });
  const p = await creator.services.auth.authenticate(key);
  phase = 'create';
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < N) {
        next++;
        await creator.services.runs.create(p, {
          kind: 'analysis',
          subject: { config: { fn: 'echo', message: 'b' } },
        });
      }
    }),
  );
  const createMs = performance.now() - t0;
  phase = 'setup';
  const drainer = await startCore({
    databaseUrl: u.toString(),
    policy,
    scheduler: { pollMs: 100, inlineConcurrency: 32 },
  });
  phase = 'drain';
  const t1 = performance.now();
  const db = creator.internals.deps.db;
  for (;;) {
    phase = 'poll';
    const r = await db
      .selectFrom('runs')
      .select(db.fn.countAll().as('n'))
      .where('status', 'in', ['succeeded', 'failed'])
      .executeTakeFirstOrThrow();
    phase = 'drain';
    if (Number(r.n) >= N) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const drainMs = performance.now() - t1;
  phase = 'setup';
  await drainer.close();
  await creator.close();
  for (const ph of ['create', 'drain']) {
    const rows = [...stats]
      .filter(([k]) => k.startsWith(`${ph}|`))
      .map(([k, v]) => [k.slice(ph.length + 1), v]);
    const total = rows.reduce((a, [, v]) => a + v.n, 0);
    const begins = rows.filter(([k]) => k.startsWith('begin')).reduce((a, [, v]) => a + v.n, 0);
    console.log(
      `\n== ${ph}: ${(ph === 'create' ? createMs : drainMs).toFixed(0)} ms for ${N} runs = ${(N / ((ph === 'create' ? createMs : drainMs) / 1000)).toFixed(0)}/s; statements/run ${(total / N).toFixed(1)}, tx/run ${(begins / N).toFixed(2)}`,
    );
    rows.sort((a, b) => b[1].n - a[1].n);
    for (const [k, v] of rows)
      console.log(
        `${(v.n / N).toFixed(2).padStart(6)} /run  avg ${(v.ms / v.n).toFixed(2).padStart(6)} ms  ${k}`,
      );
  }
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
