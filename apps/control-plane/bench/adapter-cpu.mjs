#!/usr/bin/env node
// What the HTTP framework costs per request: server-process CPU per request (16 keep-alive clients, 20,000
// requests after 3,000 warm-ups, the process's idle CPU subtracted) of an unknown-route GET answered with the
// same 404 problem by a bare node:http server, by hono on @hono/node-server alone, and by the shipped server
// (every edge middleware: request id, lifecycle, body limit, JSON guard, metrics); then an invalid POST /runs
// (auth, body read, JSON guard, zod refusal) on the shipped server. Not a benchmark of runs.
//   node apps/control-plane/bench/adapter-cpu.mjs [dist/main.js]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, freshDatabase, pool, sleep, spawnServer } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const main = process.argv[2] ?? path.join(here, '..', 'dist', 'main.js');
const N = Number(process.env.BENCH_REQUESTS ?? 20000);
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const r = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(r[11]) + Number(r[12])) * 10;
};

async function measure(label, args, env, method, target, body, headers) {
  const srv = await spawnServer(process.execPath, args, env, (line) =>
    line.includes('"control plane listening"') ? JSON.parse(line).port : undefined,
  );
  const http = client(srv.port, 16);
  try {
    await pool(3000, 16, () => http.request(method, target, body, headers));
    let t0 = cpuMs(srv.child.pid);
    const w0 = Date.now();
    await sleep(3000);
    const idle = (cpuMs(srv.child.pid) - t0) / (Date.now() - w0); // background work, ms per ms
    t0 = cpuMs(srv.child.pid);
    const w1 = Date.now();
    let status;
    await pool(N, 16, async () => {
      status = (await http.request(method, target, body, headers)).status;
    });
    const used = cpuMs(srv.child.pid) - t0 - idle * (Date.now() - w1);
    console.log(`${label}: ${((1000 * used) / N).toFixed(1)} µs/request (status ${status})`);
  } finally {
    http.close();
    await srv.stop();
  }
}

const thin = path.join(here, 'lib', 'thin-404.mjs');
await measure('bare node:http, unknown route', [thin, 'bare'], {}, 'GET', '/nothing');
await measure('hono + @hono/node-server, unknown route', [thin, 'hono'], {}, 'GET', '/nothing');
const db = await freshDatabase(`bench_adapter_${process.pid}`);
const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-bench-'));
const key = `evk_bench_${randomBytes(12).toString('hex')}`;
const env = { DATABASE_URL: db.url, PORT: '0', EVERDICT_DATA_DIR: dataDir, EVERDICT_BOOTSTRAP_API_KEY: key };
try {
  await measure('shipped server, unknown route', [main], env, 'GET', '/nothing');
  const auth = { authorization: `Bearer ${key}` };
  await measure('shipped server, POST /runs refused', [main], env, 'POST', '/runs', { kind: 'nope' }, auth);
} finally {
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
