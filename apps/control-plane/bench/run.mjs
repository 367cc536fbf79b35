#!/usr/bin/env node
// Benchmark: runs created → admitted → dispatched → settled per second through PostgreSQL, side by side
// with graphile-worker (add job → run job) on the same database. Needs a live PostgreSQL
// (EVERDICT_BENCH_DATABASE_URL, else EVERDICT_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres)
// and the built app (`pnpm --filter @everdict/control-plane build`). Prints two BENCH lines: `dispatch.pg`
// (every run in ONE tenant: its counter row and root envelope are hot rows every create and settle updates —
// the worst case) and `dispatch.pg.tenants` (the same N runs round-robin over TENANTS tenants, each with its
// own key and policy, on a fresh database), both against the same graphile-worker measurement (its jobs
// share no row, so spreading them changes nothing on its side).
import { randomBytes } from 'node:crypto';
import { Logger, makeWorkerUtils, run as runGraphile } from 'graphile-worker';

const quiet = new Logger(() => () => undefined);

import pg from 'pg';
import { startCore } from '../dist/index.js';
import { BASE, dbUrl, pool, sqlOn } from './lib/measure.mjs';

const N = Number(process.env.BENCH_RUNS ?? 2000);
// The same load on both sides: CLIENTS concurrent adders, WORKERS concurrent executions.
const CLIENTS = 16;
const WORKERS = 16;
const TENANTS = 16;

const admin = (sql) => sqlOn(BASE, sql);
const name = `everdict_bench_${randomBytes(4).toString('hex')}`;
const url = dbUrl(name);
const tenantsName = `${name}_tenants`;

async function benchEverdict(databaseUrl, tenants) {
  const key = `evk_bench_${randomBytes(12).toString('hex')}`;
  const core = await startCore({
    databaseUrl,
    bootstrapKey: key,
    policy: { maxQueued: 1_000_000, maxConcurrent: 1_000 },
    scheduler: { pollMs: 100, inlineConcurrency: WORKERS },
  });
  const admin = await core.services.auth.authenticate(key);
  // Tenant `default` plus tenants-1 more, each with its own key (and the policy new tenants get).
  const principals = [admin];
  for (let t = 1; t < tenants; t++) {
    const made = await core.services.auth.createTenant(admin, { id: `bench-${t}` });
    principals.push(await core.services.auth.authenticate(made.key.key));
  }
  const db = core.internals.deps.db;
  const t0 = performance.now();
  await pool(N, CLIENTS, (i) =>
    core.services.runs.create(principals[i % principals.length], {
      kind: 'analysis',
      subject: { config: { fn: 'echo', message: 'b' } },
    }),
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
  await pool(N, CLIENTS, (i) => utils.addJob('noop', { i }));
  await all;
  const s = (performance.now() - t0) / 1000;
  await runner.stop();
  await utils.release();
  await addPool.end();
  await workPool.end();
  return N / s;
}

function benchLine(lineName, runsPerS, jobsPerS, extra = {}) {
  const line = {
    name: lineName,
    n: N,
    ...extra,
    runs_per_s: Math.round(runsPerS),
    graphile_jobs_per_s: Math.round(jobsPerS),
    ratio: Math.round((runsPerS / jobsPerS) * 100) / 100,
  };
  console.log(`BENCH ${JSON.stringify(line)}`);
}

await admin(`CREATE DATABASE ${name}`);
try {
  const runsPerS = await benchEverdict(url, 1);
  const jobsPerS = await benchGraphile();
  benchLine('dispatch.pg', runsPerS, jobsPerS);
  await admin(`CREATE DATABASE ${tenantsName}`);
  const spreadPerS = await benchEverdict(dbUrl(tenantsName), TENANTS);
  benchLine('dispatch.pg.tenants', spreadPerS, jobsPerS, { tenants: TENANTS });
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`DROP DATABASE IF EXISTS ${tenantsName} WITH (FORCE)`);
}
