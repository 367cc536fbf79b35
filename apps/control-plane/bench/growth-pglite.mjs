#!/usr/bin/env node
// Does a run cost more as the ledger grows, on the main job's default database (PGlite)? The built core in this
// process (`startCore` from dist/index.js) on an in-memory PGlite with the vacuum keeper as the shipped server
// runs it (`EVERDICT_VACUUM_CHECK_MS` 2,000; BENCH_SIDES=on,off also runs one without), BENCH_CHUNKS (6) chunks of
// BENCH_CHUNK (4,000) `echo` analysis runs in a row, created in-process 100 at a time (`runs.createMany`: no HTTP —
// the database's share is what grows). Per chunk: runs/s, this process's CPU per run, its JavaScript heap, and
// the three statements that took the most time a run (every PGlite query timed by its text). The BENCH line
// compares the last chunk with the first (1.0: no growth). No head-log sequencer runs (it needs a key file), so
// `log_pending` only grows here.
//   pnpm --filter @everdict/control-plane build && node apps/control-plane/bench/growth-pglite.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { ECHO_SPEC } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startCore } = await import(path.join(here, '..', 'dist', 'index.js'));
const CHUNK = Number(process.env.BENCH_CHUNK ?? 4000);
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 6);
const SIDES = (process.env.BENCH_SIDES ?? 'on').split(',');
const KEY = 'evk_bench_growth_pglite_0001';

// Every PGlite query's time, by its text (the first 60 characters after a `/* prepared:… */` marker's name).
const spent = new Map();
const query = PGlite.prototype.query;
PGlite.prototype.query = async function timed(text, ...rest) {
  const t0 = performance.now();
  try {
    return await query.call(this, text, ...rest);
  } finally {
    const s = String(text).replace(/\s+/g, ' ');
    const key = /\/\* prepared:(\w+)/.exec(s)?.[1] ?? s.slice(0, 60);
    spent.set(key, (spent.get(key) ?? 0) + performance.now() - t0);
  }
};

async function side(label) {
  const core = await startCore({
    bootstrapKey: KEY,
    ...(label === 'on' ? { vacuum: { checkMs: 2000 } } : {}),
  });
  const admin = await core.services.auth.authenticate(KEY);
  const db = core.internals.deps.db;
  const succeeded = async () =>
    (await sql`SELECT count(*)::int AS n FROM runs WHERE status = 'succeeded'`.execute(db)).rows[0].n;
  const chunks = [];
  let done = 0;
  try {
    for (let k = 0; k < CHUNKS; k++) {
      spent.clear();
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < CHUNK; i += 100) {
        const results = await core.services.runs.createMany(
          admin,
          Array.from({ length: Math.min(100, CHUNK - i) }, () => ECHO_SPEC),
        );
        if (results.some((r) => !('created' in r))) throw new Error('a create was refused');
      }
      done += CHUNK;
      while ((await succeeded()) < done) await new Promise((r) => setTimeout(r, 20));
      const cpu = process.cpuUsage(cpu0);
      const chunk = {
        perSec: Math.round(CHUNK / ((performance.now() - t0) / 1000)),
        cpuMs: +((cpu.user + cpu.system) / 1000 / CHUNK).toFixed(2),
        heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
        top: Object.fromEntries(
          [...spent]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 3)
            .map(([k, ms]) => [k, +(ms / CHUNK).toFixed(3)]),
        ),
      };
      chunks.push(chunk);
      console.log(`# ${label} chunk ${k + 1}/${CHUNKS} (${done} runs): ${JSON.stringify(chunk)}`);
    }
  } finally {
    await core.close();
  }
  return chunks;
}

for (const label of SIDES) {
  const chunks = await side(label);
  const first = chunks[0];
  const last = chunks.at(-1);
  console.log(
    `BENCH growth.pglite keeper=${label} first=${first.perSec} last=${last.perSec} ratio=${(last.perSec / first.perSec).toFixed(2)} unit=runs/s(last chunk / first) cpu=${first.cpuMs}→${last.cpuMs} ms/run n=${CHUNK} chunks=${CHUNKS}`,
  );
}
