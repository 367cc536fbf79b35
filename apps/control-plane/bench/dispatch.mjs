#!/usr/bin/env node
// Benchmark (issue 14): dispatch through the PUBLIC API of the SHIPPED server (`node dist/main.js`, spawned
// as a child on a PostgreSQL DATABASE_URL, its own env defaults) side by side with graphile-worker 0.17 with
// its documented batching ON (localQueue, batched completion, addJobs for a batch) behind the thin node:http
// server this bench ships (bench/graphile-server.mjs, also a child). One process, interleaved rounds (the
// side that goes first alternates), a fresh database per side and shape, dropped afterwards.
//
// Shapes (BENCH lines; ratio = everdict / graphile, per round, median over rounds):
//   dispatch.http     16 keep-alive clients POST N analysis runs (`echo`) / jobs; first POST → all settled
//   dispatch.drain    N units queued first (server stopped), then drained: first start → all settled
//   dispatch.latency  one create every 20 ms (M creates, after BENCH_LATENCY_WARM paced ones reported as
//                     dispatch.latency.warming): create → started p99 (p50 alongside)
//   dispatch.response the same creates: create → response p99
//   dispatch.latency.cpu, .runqueue  the same creates: CPU per run of the server + its backends, and the time
//                     they spent runnable but waiting for a core (/proc schedstat run_delay) — at this load
//                     the latency tail is that wait, not I/O or locks (control-plane README, Figures)
//   dispatch.wal      WAL per run of the http shape: this database's records + their commits (pg_walinspect)
//   dispatch.cpu      CPU per run of the http shape: the server process + its database backends
//   dispatch.runner   runner leases (apps/runner/bench/dispatch-runner.mjs; the `runner` shape, ≈ 1 minute)
// Env: BENCH_RUNS (N, 1000), BENCH_WARM (50 unmetered creates on each side first), BENCH_LATENCY_RUNS (M, 250), BENCH_LATENCY_WARM (100 paced creates first), BENCH_ROUNDS (2), BENCH_SHAPES (http,drain,latency,runner),
// EVERDICT_BENCH_DATABASE_URL; EVERDICT_* settings are passed on to the shipped server; BENCH_BUILD_ROOT (a
// checkout whose apps/control-plane/dist is the everdict side: an A/B of two builds, run alternately);
// BENCH_SERVER_NODE_ARGS (node flags for the shipped server, e.g. --trace-gc).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  client,
  cpuMeter,
  ECHO_SPEC,
  freshDatabase,
  lsn,
  median,
  now,
  pool,
  quantile,
  sleep,
  spawnServer,
  until,
  walBetween,
  walDetail,
} from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = process.env.BENCH_BUILD_ROOT
  ? path.join(process.env.BENCH_BUILD_ROOT, 'apps', 'control-plane', 'dist')
  : path.join(here, '..', 'dist');
const N = Number(process.env.BENCH_RUNS ?? 1000);
const M = Number(process.env.BENCH_LATENCY_RUNS ?? 250);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SHAPES = (process.env.BENCH_SHAPES ?? 'http,drain,latency,runner').split(',');
const CLIENTS = 16;
const WARM = Number(process.env.BENCH_WARM ?? 50); // creates before each measured phase (JIT warm-up)
const LATENCY_WARM = Number(process.env.BENCH_LATENCY_WARM ?? 100);
const SPEC = ECHO_SPEC;
const tag = `bench_${process.pid}`;
let seq = 0;
let retries = 0;
const r2 = (x) => Math.round(x * 100) / 100;

// --- the two sides: start a server on a fresh database; count settled units; read start times ---------------

async function everdict() {
  const db = await freshDatabase(`${tag}_e${seq++}`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-bench-'));
  const key = `evk_bench_${randomBytes(12).toString('hex')}`;
  const srv = await spawnServer(
    process.execPath,
    [...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), path.join(dist, 'main.js')],
    {
      DATABASE_URL: db.url,
      PORT: '0',
      EVERDICT_DATA_DIR: dataDir,
      EVERDICT_BOOTSTRAP_API_KEY: key,
    },
    (line) => (line.includes('"control plane listening"') ? JSON.parse(line).port : undefined),
  );
  const http = client(srv.port, CLIENTS);
  const watch = new pg.Client({ connectionString: db.url });
  await watch.connect();
  const [{ pid: watchPid }] = (await watch.query('SELECT pg_backend_pid() AS pid')).rows;
  const auth = { authorization: `Bearer ${key}` };
  const side = {
    name: 'everdict',
    db,
    pid: srv.child.pid,
    exclude: [watchPid],
    async create() {
      let r = await http.request('POST', '/runs', SPEC, auth);
      // An overloaded database answers 503 (with Retry-After): a client retries, so does the bench.
      for (let i = 0; r.status === 503 && i < 20; i++) {
        retries += 1;
        await sleep(200);
        r = await http.request('POST', '/runs', SPEC, auth);
      }
      if (r.status !== 201) throw new Error(`POST /runs ${r.status} ${JSON.stringify(r.json)}`);
      return r.json.run.id;
    },
    async settled() {
      const { rows } = await watch.query(
        "SELECT count(*)::int AS n FROM runs WHERE status IN ('succeeded', 'failed')",
      );
      return rows[0].n;
    },
    async starts() {
      const { rows } = await watch.query('SELECT run_id AS id, started_at::float8 AS ms FROM adm_slots');
      return Object.fromEntries(rows.map((r) => [r.id, r.ms]));
    },
    // Drain: the server is stopped (SIGSTOP) while an in-process core (scheduler off) queues N runs.
    async queue(n) {
      srv.child.kill('SIGSTOP');
      const { startCore } = await import(path.join(dist, 'index.js'));
      const core = await startCore({ databaseUrl: db.url, bootstrapKey: key, scheduler: { enabled: false } });
      const who = await core.services.auth.authenticate(key);
      await pool(n, CLIENTS, () => core.services.runs.create(who, SPEC));
      await core.close();
    },
    release: async () => srv.child.kill('SIGCONT'),
    async close() {
      http.close();
      await watch.end();
      await srv.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return side;
}

async function graphile(paused = false) {
  const db = await freshDatabase(`${tag}_g${seq++}`);
  const srv = await spawnServer(
    process.execPath,
    [path.join(here, 'graphile-server.mjs')],
    { DATABASE_URL: db.url, PAUSED: paused ? '1' : '0' },
    (line) => (line.startsWith('LISTENING ') ? Number(line.slice(10)) : undefined),
  );
  const http = client(srv.port, CLIENTS);
  const stats = async () => (await http.request('GET', '/stats')).json;
  return {
    name: 'graphile',
    db,
    pid: srv.child.pid,
    exclude: [],
    async create() {
      const r = await http.request('POST', '/jobs', SPEC);
      if (r.status !== 201) throw new Error(`POST /jobs ${r.status}`);
      return r.json.id;
    },
    settled: async () => (await stats()).done,
    starts: async () => (await stats()).starts,
    async queue(n) {
      for (let i = 0; i < n; i += 500)
        await http.request('POST', '/jobs:batch', {
          jobs: Array.from({ length: Math.min(500, n - i) }, () => SPEC),
        });
    },
    release: () => http.request('POST', '/start'),
    async close() {
      http.close();
      await srv.stop();
    },
  };
}

const SIDES = { everdict, graphile };

async function warm(side) {
  await pool(WARM, CLIENTS, () => side.create());
  await until(async () => (await side.settled()) >= WARM);
}

// --- shapes -------------------------------------------------------------------------------------------------

async function shapeHttp(make) {
  const side = await make();
  try {
    await warm(side);
    const l0 = await lsn(side.db);
    const cpu = await cpuMeter(side.db, side.pid, side.exclude);
    const t0 = now();
    await pool(N, CLIENTS, () => side.create());
    await until(async () => (await side.settled()) >= WARM + N);
    const s = (now() - t0) / 1000;
    const used = await cpu.take();
    const l1 = await lsn(side.db);
    const wal = await walBetween(side.db, l0, l1);
    if (process.env.BENCH_WAL_DETAIL)
      for (const row of await walDetail(side.db, l0, l1))
        console.error(
          `WAL ${side.name} ${row.rel} ${row.rt} n/run=${r2(row.n / N)} B/run=${r2(row.bytes / N)} fpi=${r2(row.fpi / N)}`,
        );
    return {
      rate: N / s,
      walOwn: wal.own / N,
      walCluster: wal.cluster / N,
      cpuMs: (used.server + used.db) / N,
      cpuServerMs: used.server / N,
    };
  } finally {
    await side.close();
    await side.db.drop();
  }
}

async function shapeDrain(make) {
  const side = await make(true);
  try {
    if (side.name === 'everdict') await warm(side);
    await side.queue(N);
    const before = await side.settled();
    // Wall clock (Date.now) on both ends: the servers' start times are wall-clock stamps, and a VM clock step
    // between performance.timeOrigin and now would skew a mixed-clock difference (once: a negative drain).
    const released = Date.now();
    await side.release();
    await until(async () => (await side.settled()) >= before + N);
    const t1 = Date.now();
    // From the first start of the queued units (a server's wake-up and start-up are not the drain).
    const first = Math.min(
      ...Object.values(await side.starts()).filter((v) => v !== null && v >= released - 1),
    );
    return { rate: N / ((t1 - first) / 1000) };
  } finally {
    await side.close();
    await side.db.drop();
  }
}

/** One create every 20 ms, `count` of them: create → started per run id, and create → response. */
async function paced(side, count) {
  const sent = new Map();
  const responded = [];
  const t0 = now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      await sleep(Math.max(0, t0 + i * 20 - now()));
      const at = now();
      // `sent` is compared with the server's started_at (wall clock): stamp it with the same clock.
      const wall = Date.now();
      const id = await side.create();
      responded.push(now() - at);
      sent.set(String(id), wall);
    }),
  );
  return { sent, responded };
}

async function shapeLatency(make) {
  const side = await make();
  try {
    await warm(side);
    // Steady state: the first paced creates after a start and a burst meet work the burst left behind (plans
    // a pooled connection has not made yet, sequencing, batched settles): LATENCY_WARM paced creates go
    // first, on both sides, and their p99 is reported apart (dispatch.latency.warming), not hidden.
    const warming = await paced(side, LATENCY_WARM);
    await until(async () => (await side.settled()) >= WARM + LATENCY_WARM);
    const early = await side.starts();
    const warmWaits = [...warming.sent].map(([id, at]) => early[id] - at);
    const cpu = await cpuMeter(side.db, side.pid, side.exclude);
    const { sent, responded } = await paced(side, M);
    await until(async () => (await side.settled()) >= WARM + LATENCY_WARM + M);
    const used = await cpu.take();
    const starts = await side.starts();
    const waits = [...sent].map(([id, at]) => starts[id] - at);
    return {
      p50: quantile(waits, 0.5),
      p99: quantile(waits, 0.99),
      respP99: quantile(responded, 0.99),
      warmingP99: quantile(warmWaits, 0.99),
      cpuMs: (used.server + used.db) / M,
      waitMs: (used.wait.server + used.wait.db) / M,
    };
  } finally {
    await side.close();
    await side.db.drop();
  }
}

// --- rounds ---------------------------------------------------------------------------------------------------

const results = { http: [], drain: [], latency: [] };
const runShape = { http: shapeHttp, drain: shapeDrain, latency: shapeLatency };
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const shape of SHAPES) {
      if (!(shape in runShape)) continue; // `runner` runs once, after the rounds (below)
      const order = r % 2 === 0 ? ['everdict', 'graphile'] : ['graphile', 'everdict'];
      const pair = {};
      for (const s of order) pair[s] = await runShape[shape](SIDES[s]);
      results[shape].push(pair);
      console.error(`round ${r + 1} ${shape}: ${JSON.stringify(pair)}`);
    }
  }
} finally {
  const left = await import('./lib/measure.mjs').then((m) =>
    m.sqlOn(m.BASE, 'SELECT datname FROM pg_database WHERE datname LIKE $1', [`${tag}_%`]),
  );
  for (const { datname } of left)
    await import('./lib/measure.mjs').then((m) =>
      m.sqlOn(m.BASE, `DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`),
    );
}

const r0 = (x) => (x >= 100 ? Math.round(x) : r2(x));
function line(name, all, pick, unit, extra = '') {
  const rows = all.filter((p) => Number.isFinite(pick(p.everdict)) && Number.isFinite(pick(p.graphile)));
  if (rows.length === 0) return;
  const e = median(rows.map((p) => pick(p.everdict)));
  const g = median(rows.map((p) => pick(p.graphile)));
  const ratio = median(rows.map((p) => pick(p.everdict) / pick(p.graphile)));
  const per = rows.map((p) => r2(pick(p.everdict) / pick(p.graphile))).join(',');
  console.log(
    `BENCH ${name} everdict=${r0(e)} graphile=${r0(g)} ratio=${r2(ratio)} unit=${unit} rounds=[${per}]${extra}`,
  );
}
const load = (await import('node:os')).loadavg().map(r2).join('/');
console.log(
  `# n=${N} latency_n=${M} rounds=${ROUNDS} clients=${CLIENTS} loadavg=${load} everdict_503_retries=${retries} build=${dist}`,
);
// Every line of the measured shapes, in print order: [name, shape, the figure, its unit, what n counts].
const LINES = [
  ['dispatch.http', 'http', 'rate', 'runs/s', N],
  ['dispatch.drain', 'drain', 'rate', 'runs/s', N],
  ['dispatch.latency', 'latency', 'p99', 'ms(create→started p99)', M],
  ['dispatch.latency.p50', 'latency', 'p50', 'ms(create→started p50)', M],
  [
    'dispatch.latency.warming',
    'latency',
    'warmingP99',
    'ms(create→started p99, the first paced creates after the burst)',
    LATENCY_WARM,
  ],
  ['dispatch.response', 'latency', 'respP99', 'ms(create→response p99)', M],
  ['dispatch.latency.cpu', 'latency', 'cpuMs', 'ms/run(one create every 20 ms, server + backends)', M],
  [
    'dispatch.latency.runqueue',
    'latency',
    'waitMs',
    'ms/run(one create every 20 ms, server + backends runnable but waiting for a core)',
    M,
  ],
  ['dispatch.wal', 'http', 'walOwn', 'B/run(http shape, own db)', N],
  ['dispatch.wal.cluster', 'http', 'walCluster', 'B/run(http shape, whole cluster)', N],
  ['dispatch.cpu', 'http', 'cpuMs', 'ms/run(http shape, server + backends)', N],
  ['dispatch.cpu.server', 'http', 'cpuServerMs', 'ms/run(http shape, server process)', N],
];
for (const [name, shape, figure, unit, n] of LINES)
  line(name, results[shape], (x) => x[figure], unit, ` n=${n}`);

// Runner leases (issue 13's shape): apps/runner/bench/dispatch-runner.mjs — command runs `true` through one
// runner of 16 slots against graphile-worker running the same `bwrap … true` jobs, on the same PostgreSQL.
// BENCH_RUNNER_RUNS (1000) runs a phase, BENCH_RUNNER_ROUNDS (3) interleaved rounds (the median ratio printed, each
// round's beside it); its own JSON line follows as `dispatch.runner.detail`.
if (SHAPES.includes('runner')) {
  const runnerBench = path.join(here, '..', '..', 'runner', 'bench', 'dispatch-runner.mjs');
  const { benchDispatchRunner } = await import(runnerBench);
  const out = await benchDispatchRunner({
    base: (await import('./lib/measure.mjs')).BASE,
    runs: Number(process.env.BENCH_RUNNER_RUNS ?? 1000),
  });
  console.log(
    `BENCH dispatch.runner everdict=${r0(out.runnerPerSec)} graphile=${r0(out.graphilePerSec)} ratio=${r2(out.vsGraphile)} unit=runs/s(command runs \`true\`, 1 runner × 16 slots) rounds=[${out.rounds.join(',')}] n=${out.runs}`,
  );
  console.log(`BENCH dispatch.runner.detail ${JSON.stringify(out)}`);
}
