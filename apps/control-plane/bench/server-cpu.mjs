#!/usr/bin/env node
// The shipped server's CPU per run, A/B: two builds of `dist/main.js` (BENCH_A, BENCH_B; default: this
// checkout's against itself), each on a fresh database, in alternating order. Per round: 100 warm-up creates,
// then BENCH_RUNS (600) `echo` analysis runs POSTed by 16 keep-alive clients until all are settled; CPU of the
// server process and of its database backends from /proc over that phase. Not the issue's benchmark
// (dispatch.mjs is): a steadier view of the process alone, for comparing two builds on a loaded machine.
// BENCH_WARM: warm-up creates (100; thousands to measure past V8's optimising of the request path).
// BENCH_A_NODE_ARGS / BENCH_B_NODE_ARGS: node flags for that side's server (e.g. a V8 flag measured against none).
// BENCH_PACE_MS: the measured creates are sent one every that many ms instead of by 16 clients at once — the
// latency shape's load (20), where each run is claimed, settled and announced alone and a statement fewer per
// run shows; the warm-up stays concurrent.
//   BENCH_A=/work/main/apps/control-plane/dist/main.js node apps/control-plane/bench/server-cpu.mjs
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMeter, pool, shippedServer, sleep, until } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const own = path.join(here, '..', 'dist', 'main.js');
const builds = { A: process.env.BENCH_A ?? own, B: process.env.BENCH_B ?? own };
const N = Number(process.env.BENCH_RUNS ?? 600);
const PAIRS = Number(process.env.BENCH_ROUNDS ?? 4);
const CLIENTS = 16;
const WARM = Number(process.env.BENCH_WARM ?? 100); // creates before the measured phase (JIT warm-up)
const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 0);
let seq = 0;

const nodeArgs = {
  A: process.env.BENCH_A_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
  B: process.env.BENCH_B_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
};

async function round(main, flags) {
  const srv = await shippedServer(`bench_cpu_${process.pid}_${seq++}`, [...flags, main], {
    sockets: CLIENTS,
  });
  const { create, settled } = srv;
  try {
    await pool(WARM, CLIENTS, create);
    await until(async () => (await settled()) >= WARM);
    const cpu = await cpuMeter(srv.db, srv.srv.child.pid, [srv.watchPid]);
    if (PACE_MS > 0) await paced(N, PACE_MS, create);
    else await pool(N, CLIENTS, create);
    await until(async () => (await settled()) >= WARM + N);
    const used = await cpu.take();
    return {
      server: used.server / N,
      db: used.db / N,
      main: (used.threads.main ?? 0) / N,
      others: (used.server - (used.threads.main ?? 0)) / N,
    };
  } finally {
    await srv.close();
  }
}

/** `n` calls of `fn`, one started every `everyMs` on a fixed schedule (a late one does not push the next). */
async function paced(n, everyMs, fn) {
  const t0 = performance.now();
  const calls = [];
  for (let i = 0; i < n; i++) {
    const wait = t0 + i * everyMs - performance.now();
    if (wait > 0) await sleep(wait);
    calls.push(fn());
  }
  await Promise.all(calls);
}

const out = { A: [], B: [] };
for (let i = 0; i < PAIRS; i++) {
  for (const side of i % 2 ? ['B', 'A'] : ['A', 'B']) {
    const r = await round(builds[side], nodeArgs[side]);
    out[side].push(r);
    console.log(
      `round ${i + 1} ${side} server=${r.server.toFixed(2)} (main thread ${r.main.toFixed(2)}, other threads ${r.others.toFixed(2)}) db=${r.db.toFixed(2)} load=${loadavg()[0].toFixed(1)}`,
    );
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const r2 = (x) => Math.round(x * 100) / 100;
for (const [what, unit] of [
  ['server', 'ms/run(server process)'],
  ['main', 'ms/run(its main thread)'],
  ['others', 'ms/run(its other threads: V8 and libuv)'],
  ['db', 'ms/run(database backends)'],
]) {
  const a = out.A.map((x) => x[what]);
  const b = out.B.map((x) => x[what]);
  console.log(
    `BENCH server-cpu.${what} a=${r2(median(a))} b=${r2(median(b))} ratio=${r2(median(b) / median(a))} unit=${unit}${PACE_MS > 0 ? `(one create every ${PACE_MS} ms)` : ''} a_rounds=[${a.map(r2)}] b_rounds=[${b.map(r2)}] n=${N}`,
  );
}
console.log(
  `# a=${builds.A} ${nodeArgs.A.join(' ')} b=${builds.B} ${nodeArgs.B.join(' ')} loadavg=${loadavg().map(r2).join('/')}`,
);
