#!/usr/bin/env node
// The baseline of bench/dispatch.mjs: a thin node:http server in front of graphile-worker 0.17 with its
// documented batching ON (localQueue, batched completion, addJobs for a batch), worker in the same process
// (as the control plane runs its scheduler). POST /jobs → addJob → 201 {id}; POST /jobs:batch {jobs: [...]}
// → addJobs → 200 {ids}; POST /start starts the worker (held back when PAUSED=1, for the drain shape);
// GET /stats → {done, starts: {id: epoch ms}}. Prints `LISTENING <port>` once ready.
import http from 'node:http';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import pg from 'pg';

const env = process.env;
const quiet = new Logger(() => () => undefined);
const concurrency = Number(env.CONCURRENCY ?? 16);
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.POOL_MAX ?? 10) });
pool.on('error', () => undefined);
const utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
await utils.migrate();
let done = 0;
const starts = {};
let runner;
const start = async () => {
  runner ??= await run({
    pgPool: pool,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    preset: {
      worker: {
        localQueue: { size: Number(env.LOCAL_QUEUE ?? 32) },
        completeJobBatchDelay: Number(env.COMPLETE_BATCH_MS ?? 0),
        failJobBatchDelay: Number(env.COMPLETE_BATCH_MS ?? 0),
      },
    },
    taskList: {
      run: async (_payload, helpers) => {
        starts[helpers.job.id] = Date.now(); // wall clock, like everdict's started_at
        done += 1;
      },
    },
  });
};
if (env.PAUSED !== '1') await start();

const body = (req) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {}));
    req.on('error', reject);
  });
const send = (res, status, value) => {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};
const server = http.createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/jobs') {
      const job = await utils.addJob('run', await body(req));
      return send(res, 201, { id: job.id });
    }
    if (req.method === 'POST' && req.url === '/jobs:batch') {
      const { jobs } = await body(req);
      const added = await utils.addJobs(jobs.map((payload) => ({ identifier: 'run', payload })));
      return send(res, 200, { ids: added.map((j) => j.id) });
    }
    if (req.method === 'POST' && req.url === '/start') return send(res, 200, await start().then(() => ({})));
    if (req.method === 'GET' && req.url === '/stats') return send(res, 200, { done, starts });
    send(res, 404, {});
  } catch (e) {
    send(res, 500, { error: String(e) });
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`LISTENING ${server.address().port}`));
process.on('SIGTERM', async () => {
  await runner?.stop();
  await utils.release();
  await pool.end();
  process.exit(0);
});
