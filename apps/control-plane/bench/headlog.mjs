#!/usr/bin/env node
// Benchmark `headlog.append` (issue 18 §2): dispatch throughput (runs created → dispatched → settled per
// second, issue 11's measurement) with the head log on — the record_segments trigger writing a pending leaf
// in every segment's transaction, the sequencer and signer running in the same process — against the same
// load with the log off, in the same process, interleaved round by round on fresh databases. The log is
// switched off for the baseline ONLY here: the trigger disabled (`ALTER TABLE … DISABLE TRIGGER`) and no
// sequencer started. `HEADLOG_BENCH=off|on|both` (default both) picks the sides; BENCH_RUNS (default 2000),
// BENCH_ROUNDS (default 3). Needs a live PostgreSQL (as bench/run.mjs) and the built app.
import { randomBytes } from 'node:crypto';
import { startCore } from '../dist/index.js';
import { BASE, dbUrl, pool, sqlOn } from './lib/measure.mjs';

const N = Number(process.env.BENCH_RUNS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MODE = process.env.HEADLOG_BENCH ?? 'both';
const CLIENTS = 16;
const WORKERS = 16;

const admin = (sql) => sqlOn(BASE, sql);
const count = async (db, sql) => Number((await db.executeQuery(sql)).rows[0].n);

async function measure(withLog) {
  const name = `everdict_bench_log_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  try {
    const key = `evk_bench_${randomBytes(12).toString('hex')}`;
    const core = await startCore({
      databaseUrl: dbUrl(name),
      bootstrapKey: key,
      policy: { maxQueued: 1_000_000, maxConcurrent: 1_000 },
      scheduler: { pollMs: 100, inlineConcurrency: WORKERS },
      ...(withLog ? { headLog: { sthIntervalMs: 2_000 } } : {}),
    });
    const db = core.internals.deps.db;
    const { sql } = await import('kysely');
    if (!withLog) await sql`ALTER TABLE record_segments DISABLE TRIGGER record_segments_headlog`.execute(db);
    const principal = await core.services.auth.authenticate(key);
    const t0 = performance.now();
    await pool(N, CLIENTS, () =>
      core.services.runs.create(principal, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: 'b' } },
      }),
    );
    for (;;) {
      const r = await db
        .selectFrom('runs')
        .select(db.fn.countAll().as('n'))
        .where('status', 'in', ['succeeded', 'failed'])
        .executeTakeFirstOrThrow();
      if (Number(r.n) >= N) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - t0) / 1000;
    let lagMs = null;
    let sthLagMs = null;
    let leaves = null;
    if (withLog) {
      // How long after the last settle was seen the sequencer had every leaf in the tree (`lagMs`), and
      // then a signed tree head over all of them (`sthLagMs`, bounded by EVERDICT_STH_INTERVAL_MS).
      const settledAt = performance.now();
      const segments = await count(db, sql`SELECT count(*) AS n FROM record_segments`.compile(db));
      for (;;) {
        leaves = await core.headLog.size();
        if (leaves >= segments) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      lagMs = Math.round(performance.now() - settledAt);
      for (;;) {
        const sth = await core.headLog.latest().catch(() => null);
        if (sth && sth.treeSize >= segments) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      sthLagMs = Math.round(performance.now() - settledAt);
    }
    await core.close();
    return { runsPerS: N / seconds, lagMs, sthLagMs, leaves };
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

const off = [];
const on = [];
const pairRatios = []; // each round's on/off: the two sides measured back to back, under the same load
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which side goes first, so a drifting machine load does not favour one side.
  const order = round % 2 === 0 ? [false, true] : [true, false];
  for (const withLog of order) {
    if ((withLog && MODE === 'off') || (!withLog && MODE === 'on')) continue;
    const m = await measure(withLog);
    (withLog ? on : off).push(m);
    if (process.env.BENCH_DEBUG) console.error(withLog ? 'log on ' : 'log off', JSON.stringify(m));
  }
  if (on.length === off.length && on.length > 0) pairRatios.push(on.at(-1).runsPerS / off.at(-1).runsPerS);
}
const best = (xs) => Math.max(...xs.map((x) => x.runsPerS));
const median = (xs) => {
  const s = xs.map((x) => x.runsPerS).sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const line = {
  loadavg: (await import('node:os')).loadavg().map((l) => Math.round(l * 10) / 10),
  name: 'headlog.append',
  n: N,
  rounds: ROUNDS,
  ...(off.length
    ? { runs_per_s_without_log: Math.round(best(off)), median_without_log: Math.round(median(off)) }
    : {}),
  ...(on.length
    ? {
        runs_per_s_with_log: Math.round(best(on)),
        median_with_log: Math.round(median(on)),
        max_sequencing_lag_ms: Math.max(...on.map((x) => x.lagMs)),
        max_sth_lag_ms: Math.max(...on.map((x) => x.sthLagMs)),
        leaves: on[0].leaves,
      }
    : {}),
  ...(off.length && on.length
    ? {
        ratio: Math.round((best(on) / best(off)) * 1000) / 1000,
        cost_pct: Math.round((1 - best(on) / best(off)) * 1000) / 10,
        median_ratio: Math.round((median(on) / median(off)) * 1000) / 1000,
        round_ratios: pairRatios.map((r) => Math.round(r * 100) / 100),
        median_round_ratio:
          Math.round([...pairRatios].sort((a, b) => a - b)[Math.floor(pairRatios.length / 2)] * 1000) / 1000,
      }
    : {}),
};
console.log(`BENCH ${JSON.stringify(line)}`);
