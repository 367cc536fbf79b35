#!/usr/bin/env node
// What the vacuum keeper (src/db/vacuum-keeper.ts) is worth where no autovacuum runs: the shipped server on the
// http shape (16 keep-alive clients POSTing `echo` analysis runs), BENCH_CHUNKS (5) chunks of BENCH_CHUNK (5,000)
// runs in a row on one fresh database — the tables grow and their dead rows pile up — once with the keeper off
// (EVERDICT_VACUUM_CHECK_MS=0) and once on (the default), in alternating order over BENCH_ROUNDS (1) rounds. Per
// chunk: runs/s, CPU per run of the server process and of its database backends, the server's resident set, and
// the tables with the most dead rows. BENCH lines compare the last chunk of each side (the steady state the growth reaches).
// BENCH_SIDES=on (or off): that side alone, its chunks only. Needs a server with `autovacuum = off` (this
// machine's), or the keeper has nothing to do there: the first line says which.
//   node apps/control-plane/bench/vacuum.mjs
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASE, cpuMeter, median, pool, shippedServer, sqlOn, until } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const main = process.env.BENCH_MAIN ?? path.join(here, '..', 'dist', 'main.js');
const CHUNK = Number(process.env.BENCH_CHUNK ?? 5000);
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const SIDES = (process.env.BENCH_SIDES ?? 'off,on').split(','); // one side alone: no BENCH line

const [{ a: autovacuum }] = await sqlOn(BASE, "SELECT current_setting('autovacuum') AS a");

/** The server process's resident set, MiB (to see a leak over many runs). */
const rssMiB = (pid) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

/** One side: a fresh database and server, CHUNKS chunks; returns each chunk's figures. */
async function side(label, checkMs) {
  const srv = await shippedServer(`bench_vac_${label}_${process.pid}`, [main], {
    env: { EVERDICT_VACUUM_CHECK_MS: String(checkMs) },
  });
  const chunks = [];
  try {
    await pool(100, 16, srv.create);
    let done = 100;
    await until(async () => (await srv.settled()) >= done);
    for (let k = 0; k < CHUNKS; k++) {
      const cpu = await cpuMeter(srv.db, srv.srv.child.pid, [srv.watchPid]);
      const t0 = performance.now();
      await pool(CHUNK, 16, srv.create);
      done += CHUNK;
      await until(async () => (await srv.settled()) >= done);
      const seconds = (performance.now() - t0) / 1000;
      const used = await cpu.take();
      const { rows } = await srv.watch.query(
        'SELECT relname, n_dead_tup::int AS dead FROM pg_stat_user_tables ORDER BY n_dead_tup DESC LIMIT 3',
      );
      const chunk = {
        perSec: Math.round(CHUNK / seconds),
        serverMs: +(used.server / CHUNK).toFixed(2),
        dbMs: +(used.db / CHUNK).toFixed(2),
        rssMiB: rssMiB(srv.srv.child.pid),
        dead: Object.fromEntries(rows.map((r) => [r.relname, r.dead])),
      };
      chunks.push(chunk);
      console.log(`# ${label} chunk ${k + 1}/${CHUNKS} (${done - 100} runs): ${JSON.stringify(chunk)}`);
    }
  } finally {
    await srv.close();
  }
  return chunks;
}

console.log(`# server autovacuum=${autovacuum}; ${CHUNKS} × ${CHUNK} runs a side, ${ROUNDS} round(s)`);
const last = { off: [], on: [] };
for (let r = 0; r < ROUNDS; r++) {
  const order = (r % 2 === 0 ? ['off', 'on'] : ['on', 'off']).filter((l) => SIDES.includes(l));
  for (const label of order) last[label].push((await side(label, label === 'on' ? 2000 : 0)).at(-1));
}
if (SIDES.length < 2) process.exit(0);
const fig = (label, f) => median(last[label].map(f));
const line = (name, unit, f) => {
  const on = fig('on', f);
  const off = fig('off', f);
  console.log(
    `BENCH ${name} keeper=${on} none=${off} ratio=${(on / off).toFixed(2)} unit=${unit} n=${CHUNK} chunks=${CHUNKS} autovacuum=${autovacuum}`,
  );
};
line('vacuum.http', 'runs/s(last chunk)', (c) => c.perSec);
line('vacuum.db', 'ms/run(backends, last chunk)', (c) => c.dbMs);
line('vacuum.server', 'ms/run(server process, last chunk)', (c) => c.serverMs);
