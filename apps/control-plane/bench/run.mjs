#!/usr/bin/env node
// Benchmark: runs created → admitted → dispatched → settled per second through PostgreSQL, side by side
// with graphile-worker (add job → run job) on the same database. Needs a live PostgreSQL
// (EVERDICT_BENCH_DATABASE_URL, else EVERDICT_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres)
// and the built app (`pnpm --filter @everdict/control-plane build`). Prints one BENCH line.
import { randomBytes } from 'node:crypto';
import { Logger, makeWorkerUtils, run as runGraphile } from 'graphile-worker';

const quiet = new Logger(() => () => undefined);

import pg from 'pg';
import { startCore } from '../dist/index.js';

const BASE =
  process.env.EVERDICT_BENCH_DATABASE_URL ??
  process.env.EVERDICT_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';
const N = Number(process.env.BENCH_RUNS ?? 2000);
// The same load on both sides: CLIENTS concurrent adders, WORKERS concurrent executions.
const CLIENTS = 16;
const WORKERS = 16;

async function admin(sql) {
  const c = new pg.Client({ connectionString: BASE });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

const name = `everdict_bench_${randomBytes(4).toString('hex')}`;
const url = (() => {
  const u = new URL(BASE);
  u.pathname = `/${name}`;
  return u.toString();
})();

async function pool(n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function benchEverdict() {
  const key = `evk_bench_${randomBytes(12).toString('hex')}`;
  const core = await startCore({
    databaseUrl: url,
    bootstrapKey: key,
    policy: { maxQueued: 1_000_000, maxInFlight: 1_000 },
    scheduler: { pollMs: 100, inlineConcurrency: WORKERS },
  });
  const p = await core.services.auth.authenticate(key);
  const db = core.internals.deps.db;
  const t0 = performance.now();
  await pool(N, () =>
    core.services.runs.create(p, { kind: 'analysis', subject: { config: { fn: 'echo', message: 'b' } } }),
  );
  if (process.env.BENCH_DEBUG) console.error(`created ${N} in ${Math.round(performance.now() - t0)} ms`);
  for (;;) {
    const r = await db
      .selectFrom('runs')
      .select(db.fn.countAll().as('n'))
      .where('status', 'in', ['succeeded', 'failed'])
      .executeTakeFirstOrThrow();
    if (Number(r.n) >= N) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const s = (performance.now() - t0) / 1000;
  await core.close();
  return N / s;
}

async function benchGraphile() {
  // graphile's own defaults (LISTEN/NOTIFY, its pools), with error listeners so DROP DATABASE can't crash us.
  const addPool = new pg.Pool({ connectionString: url, max: 10 });
  const workPool = new pg.Pool({ connectionString: url, max: WORKERS + 2 });
  for (const p of [addPool, workPool]) p.on('error', () => undefined);
  const utils = await makeWorkerUtils({ pgPool: addPool, logger: quiet });
  await utils.migrate();
  let done = 0;
  let resolveAll;
  const all = new Promise((r) => {
    resolveAll = r;
  });
  const runner = await runGraphile({
    pgPool: workPool,
    concurrency: WORKERS,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    taskList: {
      noop: async () => {
        if (++done >= N) resolveAll();
      },
    },
  });
  const t0 = performance.now();
  await pool(N, (i) => utils.addJob('noop', { i }));
  await all;
  const s = (performance.now() - t0) / 1000;
  await runner.stop();
  await utils.release();
  await addPool.end();
  await workPool.end();
  return N / s;
}

await admin(`CREATE DATABASE ${name}`);
try {
  const runsPerS = await benchEverdict();
  const jobsPerS = await benchGraphile();
  const line = {
    name: 'dispatch.pg',
    n: N,
    runs_per_s: Math.round(runsPerS),
    graphile_jobs_per_s: Math.round(jobsPerS),
    ratio: Math.round((runsPerS / jobsPerS) * 100) / 100,
  };
  console.log(`BENCH ${JSON.stringify(line)}`);
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
