#!/usr/bin/env node
// Benchmark `dispatch.runner`: command runs (`true`) created → leased → executed → settled per second by ONE
// everdict-runner of 16 slots against the built control plane on PostgreSQL, side by side, in the same
// process, with (1) a raw loop of the same `bwrap … true` sandboxes (16 at a time) and (2) graphile-worker
// 0.17.3 running the same `bwrap … true` jobs (concurrency 16) on the same PostgreSQL server, both sides kept up
// and measured in BENCH_RUNNER_ROUNDS (default 3) interleaved rounds — the side that goes first alternates, each
// phase after a warm-up burst of its own, each round's ratio from its two adjacent phases, the median reported;
// then queued → started latency (p50/p99) of runs created one at a time with the runner idle.
//
// Needs: the built control plane, runner and client (`pnpm --filter @everdict/runner... --filter
// @everdict/control-plane... build`), bubblewrap, and a live PostgreSQL (EVERDICT_BENCH_DATABASE_URL, else
// EVERDICT_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test) — each side gets a fresh database
// created on that server and dropped after. BENCH_RUNS (default 1000: the steady state — at 200 the control
// plane's one-time costs, its pool growing to working size and warming its connections, were ≈ 5 ms of PostgreSQL
// CPU per run), BENCH_LATENCY_RUNS (default 40).
// `machineMsPerRun`: the whole machine's busy CPU per run over each side's measured phase (/proc/stat: user, nice,
// system, irq, softirq, steal; this bench process included on every side) — the kernel's work for namespaces,
// mounts and cgroups is charged to no process of ours, and this shape is CPU-bound on a small machine. It counts
// everything the machine runs meanwhile: read it on a quiet machine only.
// BENCH_LOG_STATEMENTS=1: `log_statement = all` on the control plane's database (the server log counts its SQL);
// BENCH_LOG_STATEMENTS=durations: `log_min_duration_statement = 0` (each statement with its duration).
// BENCH_RUNNER_NODE_ARGS: node flags for the runner daemon (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
//
// `benchDispatchRunner(options)` is exported for apps/control-plane/bench/dispatch.mjs; run directly it
// prints one line: BENCH dispatch.runner {…}.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from '@everdict/client/testing';
import { client, median } from '../../control-plane/bench/lib/measure.mjs';
import { pool, rawBwrap, SLOTS, startGraphileBwrap } from './baselines.mjs';
import { cpuMs, machineBusyMs, machinePer, pgCpuMs, spawnerOf } from './cpu-meters.mjs';

// pg is the control plane's dependency: resolved from there, same version.
const pg = createRequire(new URL('../../control-plane/package.json', import.meta.url))('pg');

// BENCH_BUILD_ROOT: measure another checkout's built control plane and runner with this script (A/B).
const ROOT = process.env.BENCH_BUILD_ROOT;
const CLI = ROOT
  ? join(ROOT, 'apps/runner/dist/cli.js')
  : fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const CP_MAIN = ROOT ? join(ROOT, 'apps/control-plane/dist/main.js') : undefined;
/** Warm-up runs (jobs) before each side's measured phase (BENCH_WARM_RUNS). */
const WARM = Number(process.env.BENCH_WARM_RUNS ?? 2 * SLOTS);
/** Interleaved rounds of the throughput phase (BENCH_RUNNER_ROUNDS): the side that goes first alternates. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_RUNNER_ROUNDS ?? 3));

function scratch(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711);
  return dir;
}

async function onServer(base, sql) {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end();
  }
}

function dbUrl(base, database) {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/**
 * POST through a keep-alive `node:http` client (the one dispatch.mjs's HTTP shape uses). With `fetch` (undici) this
 * process spent 1.7–1.9 ms of CPU per run creating them (`coreMsPerRun.benchClient`; 0.6–0.9 ms with this client):
 * the load generator's cost, charged to the machine's figure of the side it creates runs for.
 */
const clients = new Map();
async function post(url, key, path, body) {
  const port = Number(new URL(url).port);
  if (!clients.has(port)) clients.set(port, client(port, SLOTS));
  const r = await clients.get(port).request('POST', path, body, { authorization: `Bearer ${key}` });
  if (r.status >= 300) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

/**
 * Until `sql`'s count reaches `target`: polled every 20 ms near the end (the phase's end time within 20 ms), every
 * 250 ms while more than 50 are left: a count over the runs table 50 times a second through the whole phase is
 * the bench's own work, charged to the machine's figure of the side it waits for.
 */
async function waitCount(client, sql, target) {
  for (;;) {
    const { rows } = await client.query(sql);
    const left = target - Number(rows[0].n);
    if (left <= 0) return;
    await new Promise((r) => setTimeout(r, left > 50 ? 250 : 20));
  }
}

/**
 * Runs the three measurements; returns the figures (runs/s of each side, the ratios, the latency).
 * `base`: a PostgreSQL server URL (a database on it is created per side and dropped).
 */
export async function benchDispatchRunner({
  base = process.env.EVERDICT_BENCH_DATABASE_URL ??
    process.env.EVERDICT_TEST_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/test',
  runs = Number(process.env.BENCH_RUNS ?? 1000),
  latencyRuns = Number(process.env.BENCH_LATENCY_RUNS ?? 40),
  log = () => {},
} = {}) {
  const suffix = randomBytes(4).toString('hex');
  const cpDb = `everdict_bench_runner_${suffix}`;
  const gwDb = `everdict_bench_graphile_${suffix}`;
  const work = scratch('everdict-bench-runner-');
  const workspace = join(work, 'ws');
  mkdirSync(workspace, { mode: 0o777 });
  chmodSync(workspace, 0o777);
  await onServer(base, `CREATE DATABASE ${cpDb}`);
  await onServer(base, `CREATE DATABASE ${gwDb}`);
  // BENCH_LOG_STATEMENTS=1: every statement on the control plane's database goes to the server's log
  // (log_statement = all, set on that database only): the SQL a run costs, counted from the log.
  // BENCH_LOG_STATEMENTS=durations: each statement with its duration (log_min_duration_statement = 0).
  if (process.env.BENCH_LOG_STATEMENTS === 'durations')
    await onServer(base, `ALTER DATABASE ${cpDb} SET log_min_duration_statement = 0`);
  else if (process.env.BENCH_LOG_STATEMENTS)
    await onServer(base, `ALTER DATABASE ${cpDb} SET log_statement = 'all'`);
  let cp;
  let runner;
  let graphileSide;
  const db = new pg.Client({ connectionString: dbUrl(base, cpDb) });
  try {
    // 1. The raw bwrap loop first (nothing else running), then graphile-worker started (measured in the rounds).
    await rawBwrap(SLOTS, workspace); // warm the page cache
    const bw0 = cpuMs(process.pid).children;
    const { result: bwrapPerSec, msPerUnit: bwrapMachineMs } = await machinePer(runs, () =>
      rawBwrap(runs, workspace),
    );
    const bwrapCoreMs = Math.round((cpuMs(process.pid).children - bw0) / runs);
    log(`raw bwrap: ${bwrapPerSec.toFixed(1)}/s`);
    // graphile-worker stays up across the rounds, as our control plane and runner do; each of its phases starts
    // with its own warm-up (graphilePhase), so none is run here.
    graphileSide = await startGraphileBwrap(dbUrl(base, gwDb), gwDb, workspace);

    // 2. The control plane (built, PostgreSQL) and one runner of 16 slots, as child processes.
    cp = await startControlPlane({
      ...(CP_MAIN ? { mainPath: CP_MAIN } : {}),
      dataDir: join(work, 'cp'),
      env: {
        // EVERDICT_* settings are passed on to the control plane (as dispatch.mjs does): EVERDICT_PG_POOL_MAX, …
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('EVERDICT_'))),
        DATABASE_URL: dbUrl(base, cpDb),
        EVERDICT_EMBEDDED_RUNNER: '0',
        ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
      },
    });
    const { token } = await post(cp.url, cp.apiKey, '/runners/pairing-tokens', {});
    const state = join(work, 'runner-state');
    const paired = spawnSync(
      process.execPath,
      [CLI, 'pair', cp.url, token, '--name', 'bench', '--slots', String(SLOTS), '--state-dir', state],
      { encoding: 'utf8' },
    );
    if (paired.status !== 0) throw new Error(`pair: ${paired.stderr}`);
    const nodeArgs = process.env.BENCH_RUNNER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    runner = spawn(
      process.execPath,
      [...nodeArgs, CLI, 'start', '--state-dir', state, '--slots', String(SLOTS)],
      {
        env: {
          ...process.env,
          EVERDICT_PLACEMENT_DIR: join(work, 'placement'),
          ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
        },
        stdio: ['ignore', 'ignore', process.env.BENCH_DEBUG ? 'inherit' : 'ignore'],
      },
    );
    await db.connect();
    const settledSql = `SELECT count(*) AS n FROM runs WHERE kind = 'command' AND status IN ('succeeded', 'failed')`;
    const create = () =>
      post(cp.url, cp.apiKey, '/runs', { kind: 'command', subject: { command: ['true'] } });

    // Warm-up: the runner connected, a sandbox made, the code paths hot — and at the throughput phase's
    // concurrency (16 clients, twice the slots), so the control plane's pool has grown to its working size and
    // warmed its connections (db/warm-pool.ts: ≈ 30–170 ms of PostgreSQL time per new connection) before the
    // measurement, as a server under steady load has. (Created one at a time, the pool grew during the phase.)
    await pool(WARM, SLOTS, create);
    await waitCount(db, settledSql, WARM);

    // CPU of the control plane, the runner (its reaped children: the sandboxes) and the PostgreSQL
    // backends of the control plane's database.
    const sample = async () => ({
      at: performance.now(),
      bench: cpuMs(process.pid).self,
      cp: cpuMs(cp.child.pid),
      runner: cpuMs(runner.pid),
      spawner: (() => {
        const pid = spawnerOf(runner.pid);
        return pid === null ? { pid, self: 0, kernel: 0, children: 0 } : { pid, ...cpuMs(pid) };
      })(),
      pg: await pgCpuMs(db, cpDb),
    });
    const delta = (a, b) => {
      let pg = 0;
      for (const [pid, ms] of b.pg) pg += ms - (a.pg.get(pid) ?? 0);
      return {
        seconds: (b.at - a.at) / 1000,
        // this process: the 16 clients creating the runs and the poll for their end
        benchClient: b.bench - a.bench,
        controlPlane: b.cp.self - a.cp.self,
        controlPlaneKernel: b.cp.kernel - a.cp.kernel,
        runner: b.runner.self - a.runner.self,
        runnerKernel: b.runner.kernel - a.runner.kernel,
        // The spawner's own CPU, counted only while it is the same process at both ends.
        spawner: a.spawner.pid === b.spawner.pid ? b.spawner.self - a.spawner.self : 0,
        // bubblewrap's: reaped by the runner (inline spawns) or by its spawner.
        sandboxes:
          b.runner.children -
          a.runner.children +
          (a.spawner.pid === b.spawner.pid ? b.spawner.children - a.spawner.children : 0),
        postgres: pg,
      };
    };
    // The background (heartbeats, sweeps, long polls) of an idle runner, per second: subtracted below, so the
    // per-run figures do not grow with a slower run's duration.
    const idle0 = await sample();
    await new Promise((r) => setTimeout(r, 3000));
    const idle1 = await sample();
    const background = delta(idle0, idle1);

    let settled = WARM;
    /** One measured phase of our side: a warm-up burst of WARM runs first (see below), then N runs timed. */
    const ourPhase = async () => {
      // An idle pause cools what the warm-up heated: caches expire, and the first burst after it (every
      // component waking at once) grew the pool from 5 to 10 connections inside the measured phase, 70–100
      // warm-ups of ≈ 30 ms each. So each phase starts after a warm-up burst of its own (graphile's too).
      await pool(WARM, SLOTS, create);
      settled += WARM;
      await waitCount(db, settledSql, settled);
      const warmed = await sample();
      // Throughput: N runs created (16 clients), until the last one settled.
      const t0 = performance.now();
      const m0 = machineBusyMs();
      await pool(runs, SLOTS, create);
      settled += runs;
      await waitCount(db, settledSql, settled);
      const perSec = runs / ((performance.now() - t0) / 1000);
      const machineMs = Math.round(((machineBusyMs() - m0) / runs) * 10) / 10;
      const busy = delta(warmed, await sample());
      // Per run, net of the idle background over the same seconds: CPU ms by process (0.1 ms: 200 runs of
      // 10-ms clock ticks resolve 0.05 ms).
      const per = (k) =>
        Math.round(((busy[k] - (background[k] / background.seconds) * busy.seconds) / runs) * 10) / 10;
      const keys = ['controlPlane', 'controlPlaneKernel', 'runner', 'runnerKernel', 'spawner', 'sandboxes'];
      const coreMs = Object.fromEntries([...keys, 'postgres', 'benchClient'].map((k) => [k, per(k)]));
      return { perSec, machineMs, coreMs };
    };
    const graphilePhase = async () => {
      await graphileSide.warm(WARM);
      return graphileSide.phase(runs);
    };

    // 3. Throughput, in interleaved rounds: the side that goes first alternates, each round's ratio is taken
    // from its two adjacent phases, and the median of the rounds is reported (one machine's drift — another
    // process, the host's neighbours — moves both sides of a round alike).
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      let ours;
      let theirs;
      if (r % 2 === 0) {
        theirs = await graphilePhase();
        ours = await ourPhase();
      } else {
        ours = await ourPhase();
        theirs = await graphilePhase();
      }
      const ratio = ours.perSec / theirs.perSec;
      rounds.push({ ours, theirs, ratio });
      log(
        `round ${r + 1}: runner ${ours.perSec.toFixed(1)}/s, graphile-worker ${theirs.perSec.toFixed(1)}/s (${ratio.toFixed(2)})`,
      );
    }
    const r1 = (x) => Math.round(x * 10) / 10;
    /** Each key's median over the rounds (to 0.1). */
    const medians = (objs) =>
      Object.fromEntries(Object.keys(objs[0]).map((k) => [k, r1(median(objs.map((o) => o[k])))]));
    const runnerPerSec = median(rounds.map((x) => x.ours.perSec));
    const graphilePerSec = median(rounds.map((x) => x.theirs.perSec));
    const runnerMachineMs = r1(median(rounds.map((x) => x.ours.machineMs)));
    const graphileMachineMs = r1(median(rounds.map((x) => x.theirs.machineMs)));
    const coreMsPerRun = { ...medians(rounds.map((x) => x.ours.coreMs)), rawBwrap: bwrapCoreMs };
    const graphileCoreMsPerJob = medians(rounds.map((x) => x.theirs.coreMsPerJob));
    const { rows: bad } = await db.query(
      `SELECT count(*) AS n FROM runs WHERE kind = 'command' AND status <> 'succeeded'`,
    );
    log(`runner: ${runnerPerSec.toFixed(1)}/s, median of ${ROUNDS} rounds (${bad[0].n} not succeeded)`);

    // 4. Latency with the runner idle: one run at a time, created_at → started_at.
    const lat = [];
    for (let i = 0; i < latencyRuns; i++) {
      const { run } = await create();
      for (;;) {
        const { rows } = await db.query(
          `SELECT r.status, a.started_at - extract(epoch FROM r.created_at) * 1000 AS ms
            FROM runs r JOIN adm_slots a ON a.tenant = r.tenant_id AND a.run_id = r.id WHERE r.id = $1`,
          [run.id],
        );
        if (rows[0].status === 'succeeded' || rows[0].status === 'failed') {
          lat.push(Number(rows[0].ms));
          break;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    lat.sort((a, b) => a - b);
    return {
      runs,
      slots: SLOTS,
      runnerPerSec: Math.round(runnerPerSec * 10) / 10,
      bwrapPerSec: Math.round(bwrapPerSec * 10) / 10,
      graphilePerSec: Math.round(graphilePerSec * 10) / 10,
      // The median of the rounds' ratios (each from two adjacent phases), and each round's.
      vsGraphile: Math.round(median(rounds.map((x) => x.ratio)) * 100) / 100,
      rounds: rounds.map((x) => Math.round(x.ratio * 100) / 100),
      vsBwrap: Math.round((runnerPerSec / bwrapPerSec) * 100) / 100,
      notSucceeded: Number(bad[0].n),
      coreMsPerRun,
      graphileCoreMsPerJob,
      machineMsPerRun: { runner: runnerMachineMs, graphile: graphileMachineMs, rawBwrap: bwrapMachineMs },
      machineMsPerRunRounds: rounds.map((x) => [x.ours.machineMs, x.theirs.machineMs]),
      queuedToStartedMs: {
        p50: Math.round(quantile(lat, 0.5) * 10) / 10,
        p99: Math.round(quantile(lat, 0.99) * 10) / 10,
        n: lat.length,
      },
    };
  } finally {
    await db.end().catch(() => {});
    if (runner && runner.exitCode === null) {
      const exited = new Promise((r) => runner.once('exit', r));
      runner.kill('SIGTERM');
      await exited;
    }
    await cp?.stop().catch(() => {});
    await graphileSide?.stop().catch(() => {});
    await onServer(base, `DROP DATABASE IF EXISTS ${cpDb} WITH (FORCE)`).catch(() => {});
    await onServer(base, `DROP DATABASE IF EXISTS ${gwDb} WITH (FORCE)`).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const figures = await benchDispatchRunner({
    log: (m) => process.stderr.write(`${m}\n`),
  });
  process.stdout.write(`BENCH dispatch.runner ${JSON.stringify(figures)}\n`);
  process.exit(0);
}
