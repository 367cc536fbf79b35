// Measuring helpers of the benches (dispatch, headlog, run): databases, child servers, keep-alive HTTP, WAL and CPU.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export const BASE =
  process.env.EVERDICT_BENCH_DATABASE_URL ??
  process.env.EVERDICT_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';

export function dbUrl(database) {
  const u = new URL(BASE);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function sqlOn(url, text, values) {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(text, values)).rows;
  } finally {
    await c.end();
  }
}

/** A fresh database with pg_walinspect (to attribute WAL to it); dropped by `drop()`. */
export async function freshDatabase(name) {
  await sqlOn(BASE, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await sqlOn(BASE, `CREATE DATABASE ${name}`);
  const url = dbUrl(name);
  await sqlOn(url, 'CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  const [{ oid }] = await sqlOn(
    url,
    'SELECT oid::text AS oid FROM pg_database WHERE datname = current_database()',
  );
  return {
    name,
    url,
    oid,
    drop: () => sqlOn(BASE, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

export const lsn = async (db) => (await sqlOn(db.url, 'SELECT pg_current_wal_lsn()::text AS l'))[0].l;

/**
 * WAL between two LSNs: `cluster` = every byte (other sessions on this server included), `own` = the records
 * touching this database's relations plus the records (commits) of the transactions that wrote them.
 */
export async function walBetween(db, from, to) {
  const cluster = Number(
    (await sqlOn(db.url, 'SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::float8 AS d', [from, to]))[0].d,
  );
  // On a busy server the segments may be recycled before they are read: then only the cluster figure.
  const [r] = await sqlOn(
    db.url,
    `WITH r AS (SELECT xid, record_length, block_ref FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
          mine AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE $3 AND xid::text <> '0')
     SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::float8 AS cluster,
            COALESCE(sum(record_length) FILTER (WHERE block_ref LIKE $3 OR xid IN (SELECT xid FROM mine)), 0)::float8 AS own
     FROM r`,
    [from, to, `%/${db.oid}/%`],
  ).catch(() => [{ cluster, own: Number.NaN }]);
  return r;
}

/** Where a database's WAL went between two LSNs: bytes by relation (FPIs included) and by record type. */
export async function walDetail(db, from, to) {
  return sqlOn(
    db.url,
    `WITH r AS (SELECT resource_manager || '/' || record_type AS rt, record_length, fpi_length,
                       substring(block_ref from 'rel \\d+/' || $3 || '/(\\d+)') AS node
                FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) WHERE block_ref LIKE '%/' || $3 || '/%')
     SELECT COALESCE(c.relname, r.node) AS rel, r.rt, count(*)::int AS n, sum(record_length)::int AS bytes,
            sum(fpi_length)::int AS fpi
     FROM r LEFT JOIN pg_class c ON c.relfilenode::text = r.node
     GROUP BY 1, 2 ORDER BY bytes DESC LIMIT $4`,
    [from, to, db.oid, Number(process.env.BENCH_WAL_DETAIL) > 1 ? Number(process.env.BENCH_WAL_DETAIL) : 40],
    // On a busy server the segments may be recycled before they are read: then no detail.
  ).catch((e) => {
    console.error(`WAL detail unavailable: ${e.message}`);
    return [];
  });
}

const TICK = 100; // clock ticks per second (USER_HZ)
function cpuMsOf(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / TICK; // utime + stime
  } catch {
    return 0;
  }
}

/**
 * Ms a process's threads spent runnable but waiting for a core (`run_delay`, the second field of each thread's
 * /proc/<pid>/task/<tid>/schedstat, ns): on a 2-core machine, the part of a request's latency that is neither
 * its own work nor I/O. Threads that ended in between are not counted.
 */
function runQueueMsOf(pid) {
  let ns = 0;
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {}
  }
  return ns / 1e6;
}

/** CPU ms of a process's threads: `main` (the event loop) and the rest summed by name (V8's and libuv's say `node`). */
function threadCpuOf(pid) {
  const out = new Map();
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // Node's threads all say `node`: the main thread is the one whose id is the process's.
      const name = tid === String(pid) ? 'main' : f.slice(f.indexOf('(') + 1, f.lastIndexOf(')'));
      const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(rest[11]) + Number(rest[12])) * 1000) / TICK;
      out.set(name, (out.get(name) ?? 0) + ms);
    } catch {}
  }
  return out;
}

/**
 * CPU of a process and of the database's backends, as a counter: `take()` → ms since `cpuMeter()`; `threads`
 * splits the process's by thread name (threads that ended in between are in `server` only).
 */
export async function cpuMeter(db, pid, exclude = []) {
  const backends = async () =>
    (await sqlOn(BASE, 'SELECT pid FROM pg_stat_activity WHERE datname = $1', [db.name]))
      .map((r) => r.pid)
      .filter((p) => !exclude.includes(p));
  const base = new Map((await backends()).map((p) => [p, { cpu: cpuMsOf(p), wait: runQueueMsOf(p) }]));
  const self = cpuMsOf(pid);
  const selfWait = runQueueMsOf(pid);
  const selfThreads = threadCpuOf(pid);
  return {
    /**
     * {server, db, threads, wait}: ms of CPU since the meter started; `wait` = {server, db}, ms spent runnable
     * but waiting for a core (a backend that started after the meter counts from its start).
     */
    async take() {
      let db = 0;
      let dbWait = 0;
      for (const p of await backends()) {
        db += cpuMsOf(p) - (base.get(p)?.cpu ?? 0);
        dbWait += runQueueMsOf(p) - (base.get(p)?.wait ?? 0);
      }
      const threads = {};
      for (const [name, ms] of threadCpuOf(pid)) threads[name] = ms - (selfThreads.get(name) ?? 0);
      return {
        server: cpuMsOf(pid) - self,
        db,
        threads,
        wait: { server: runQueueMsOf(pid) - selfWait, db: dbWait },
      };
    },
  };
}

/** Spawn a server; resolves when a stdout line matches `ready` (returning the port it names). */
export function spawnServer(cmd, args, env, ready) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => {
    err = (err + d).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d;
      for (;;) {
        const nl = buf.indexOf('\n');
        if (nl < 0) break;
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const port = ready(line);
        if (port) {
          child.stdout.off('data', onData);
          // BENCH_SERVER_OUT=<file>: the server's output after it is ready (its logs, --trace-gc lines, …).
          if (process.env.BENCH_SERVER_OUT)
            child.stdout.pipe(createWriteStream(process.env.BENCH_SERVER_OUT, { flags: 'a' }));
          else child.stdout.resume();
          resolve({ child, port, stop: () => stopChild(child) });
        }
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`)));
  });
}

function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
  });
}

/** A keep-alive JSON client: `request(method, path, body?, headers?)` → {status, json}. */
export function client(port, sockets = 16) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const request = (method, path, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent,
          headers: {
            ...headers,
            ...(text
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }
              : {}),
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString();
            resolve({ status: res.statusCode, json: raw ? JSON.parse(raw) : null });
          });
        },
      );
      req.on('error', reject);
      req.end(text);
    });
  return { request, close: () => agent.destroy() };
}

/** A monotonic clock for durations measured in this process. Never compare it with a server's timestamp (a
 * wall-clock `Date.now()` or `started_at`): use `Date.now()` for those, one clock on both sides. */
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `n` items through `workers` concurrent loops. */
export async function pool(n, workers, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export async function until(check, everyMs = 20, timeoutMs = 600_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('bench: timed out waiting');
    await sleep(everyMs);
  }
}

export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The shapes' analysis run: `echo`, executed inline. */
export const ECHO_SPEC = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'b' } } };

/**
 * The shipped server (`node <args>`, the last one its main.js) on a fresh database `name`, with a keep-alive client
 * of `sockets` and a watch connection: `create()` POSTs one echo run (a non-201 throws), `settled()` counts the
 * finished runs, `watchPid` is the watch connection's backend (to leave out of a cpuMeter), `close()` stops and
 * drops everything. `env` is added to the server's.
 */
export async function shippedServer(name, args, { env = {}, sockets = 16 } = {}) {
  const db = await freshDatabase(name);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-bench-'));
  const key = `evk_bench_${randomBytes(12).toString('hex')}`;
  const srv = await spawnServer(
    process.execPath,
    args,
    { DATABASE_URL: db.url, PORT: '0', EVERDICT_DATA_DIR: dataDir, EVERDICT_BOOTSTRAP_API_KEY: key, ...env },
    (line) => (line.includes('"control plane listening"') ? JSON.parse(line).port : undefined),
  );
  const api = client(srv.port, sockets);
  const watch = new pg.Client({ connectionString: db.url });
  await watch.connect();
  const [{ pid: watchPid }] = (await watch.query('SELECT pg_backend_pid() AS pid')).rows;
  const auth = { authorization: `Bearer ${key}` };
  return {
    db,
    srv,
    watch,
    watchPid,
    settled: async () =>
      (await watch.query("SELECT count(*)::int AS n FROM runs WHERE status IN ('succeeded', 'failed')"))
        .rows[0].n,
    create: async () => {
      const r = await api.request('POST', '/runs', ECHO_SPEC, auth);
      if (r.status !== 201) throw new Error(`POST /runs ${r.status} ${JSON.stringify(r.json)}`);
    },
    async close() {
      api.close();
      await watch.end();
      await srv.stop();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
