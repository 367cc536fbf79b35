#!/usr/bin/env node
// BENCH idle: what an idle embedded control plane costs. The built server (`dist/main.js`) as the main job runs
// it — PGlite in a fresh data directory, its embedded runner (a process of its own, long-polling for leases) —
// left idle: this process reads the server's CPU (`/proc/<pid>/stat`, utime + stime) over BENCH_SECONDS (20)
// after BENCH_WARM_SECONDS (20) of start-up, against a baseline side in interleaved rounds (BENCH_ROUNDS pairs,
// 2; the side that goes first alternates; medians printed). Baseline: the same build with its fallback looks
// NOT spaced out while alone (EVERDICT_ALONE_POLL_MS = the poll, 1 s: every loop looks every poll, as before
// src/db/fallback-poll.ts), or, with BENCH_BASELINE_MAIN=<another build's dist/main.js>, that build as it is.
//   pnpm --filter @everdict/control-plane build && node apps/control-plane/bench/idle.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const own = path.join(here, '..', 'dist', 'main.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 20);
const baselineMain = process.env.BENCH_BASELINE_MAIN;
const sides = {
  alone: { main: own, env: {} },
  baseline: baselineMain
    ? { main: baselineMain, env: {} }
    : { main: own, env: { EVERDICT_ALONE_POLL_MS: '1000' } },
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TICK = 1000 / 100; // ms per clock tick (USER_HZ is 100 on Linux)

/** A free TCP port on 127.0.0.1. */
const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK; // utime, stime (fields 14 and 15 of stat)
};

/** CPU ms a second of an idle server of `side`. */
async function idleCpu(side) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-idle-'));
  const port = await freePort();
  const child = spawn(process.execPath, [side.main], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      EVERDICT_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...side.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = ''; // shown only if the server does not start (it prints its admin key there)
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((r) => child.once('exit', r));
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the server did not start:\n${stderr}`);
      await sleep(200);
    }
    await sleep(WARM_SECONDS * 1000);
    const before = cpuMs(child.pid);
    const t0 = performance.now();
    await sleep(SECONDS * 1000);
    return (cpuMs(child.pid) - before) / ((performance.now() - t0) / 1000);
  } finally {
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
};
const out = { alone: [], baseline: [] };
for (let i = 0; i < ROUNDS; i++) {
  for (const name of i % 2 ? ['baseline', 'alone'] : ['alone', 'baseline']) {
    out[name].push(await idleCpu(sides[name]));
    console.log(`round ${i + 1} ${name} ${out[name].at(-1).toFixed(1)} ms of CPU a second`);
  }
}
const r1 = (x) => x.toFixed(1);
console.log(
  `BENCH idle cpu_ms_per_s=${r1(median(out.alone))} baseline=${r1(median(out.baseline))} ratio=${(median(out.alone) / median(out.baseline)).toFixed(2)} rounds=[${out.alone.map(r1)}] baseline_rounds=[${out.baseline.map(r1)}] seconds=${SECONDS} baseline_is=${baselineMain ?? 'EVERDICT_ALONE_POLL_MS=1000'}`,
);
