#!/usr/bin/env node
// Where a lone create's time goes (issue 14, latency shape): the shipped server on a fresh database, one create
// every 20 ms; per run: sent → created_at (the server's clock at admission) → response → started_at →
// settled (updated_at of the terminal row). Prints p50/p99 of each step. Env: BENCH_LATENCY_RUNS (200),
// BENCH_INTERVAL_MS (20), BENCH_WARM (creates before the timed ones, 50).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { client, freshDatabase, now, pool, quantile, sleep, spawnServer, until } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const M = Number(process.env.BENCH_LATENCY_RUNS ?? 200);
const EVERY = Number(process.env.BENCH_INTERVAL_MS ?? 20);
const WARM = Number(process.env.BENCH_WARM ?? 50);
const SPEC = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'b' } } };
const db = await freshDatabase(`bench_trace_${process.pid}`);
const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-trace-'));
const key = `evk_bench_${randomBytes(12).toString('hex')}`;
const srv = await spawnServer(
  process.execPath,
  [
    ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    path.join(here, '..', 'dist', 'main.js'),
  ],
  { DATABASE_URL: db.url, PORT: '0', EVERDICT_DATA_DIR: dataDir, EVERDICT_BOOTSTRAP_API_KEY: key },
  (line) => (line.includes('"control plane listening"') ? JSON.parse(line).port : undefined),
);
const http = client(srv.port, 16);
const watch = new pg.Client({ connectionString: db.url });
await watch.connect();
const auth = { authorization: `Bearer ${key}` };
const create = async () => {
  const r = await http.request('POST', '/runs', SPEC, auth);
  if (r.status !== 201) throw new Error(`POST /runs ${r.status}`);
  return r.json.run.id;
};
const settled = async () =>
  (await watch.query("SELECT count(*)::int AS n FROM runs WHERE status IN ('succeeded','failed')")).rows[0].n;
try {
  await pool(WARM, 16, create);
  await until(async () => (await settled()) >= WARM);
  await sleep(500);
  const sent = new Map();
  const t0 = now();
  await Promise.all(
    Array.from({ length: M }, async (_, i) => {
      await sleep(Math.max(0, t0 + i * EVERY - now()));
      // Wall clock: every step below is compared with the server's wall-clock stamps.
      const at = Date.now();
      const id = await create();
      sent.set(id, { at, resp: Date.now() });
    }),
  );
  await until(async () => (await settled()) >= WARM + M);
  const { rows } = await watch.query(
    `SELECT r.id, extract(epoch FROM r.created_at) * 1000 AS c, a.started_at::float8 AS s,
            r.updated_at::float8 AS u FROM runs r JOIN adm_slots a ON a.tenant = r.tenant_id AND a.run_id = r.id`,
  );
  const steps = {
    'sent→created': [],
    'created→response': [],
    'response→started': [],
    'created→started': [],
    'sent→started': [],
    'started→settled': [],
    'sent→response': [],
  };
  for (const r of rows) {
    const x = sent.get(r.id);
    if (!x) continue;
    const [c, s, u] = [Number(r.c), Number(r.s), Number(r.u)];
    steps['sent→created'].push(c - x.at);
    steps['created→response'].push(x.resp - c);
    steps['response→started'].push(s - x.resp);
    steps['created→started'].push(s - c);
    steps['sent→started'].push(s - x.at);
    steps['started→settled'].push(u - s);
    steps['sent→response'].push(x.resp - x.at);
  }
  for (const [k, v] of Object.entries(steps))
    console.log(
      `${k.padEnd(20)} p50=${quantile(v, 0.5).toFixed(1)} p90=${quantile(v, 0.9).toFixed(1)} p99=${quantile(v, 0.99).toFixed(1)} n=${v.length}`,
    );
} finally {
  http.close();
  await watch.end();
  await srv.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await db.drop();
}
