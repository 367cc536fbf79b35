// Machine CPU per sandbox of the process driver path, by where it is spent. Each phase runs N items,
// BENCH_CONCURRENCY (16) at a time, in a cpuacct cgroup of its own (the sandboxes' cgroups are made under
// it: `cgroupParent`), and reports per item (ms):
//   attributed — cpuacct.usage of the phase's cgroup: this process, the spawner, bubblewrap, the sandboxes;
//   kthreads   — CPU of kernel threads (kworkers, RCU, ksoftirqd, …: /proc/<pid>/stat of children of kthreadd)
//                over the phase, minus their rate in an idle phase of the same length just before;
//   kworkers   — the same for kworker/*, ksoftirqd/* and rcu* threads only;
//   machine    — /proc/stat busy time (all but idle and iowait) over the phase, minus the idle phase's rate;
//                user/system/softirq apart. Other processes on the machine add noise to kthreads and machine
//                (the idle phase takes their rate out, as far as it is steady): repeat, take medians.
// Phases (BENCH_PHASES, comma-separated):
//   raw      — `bwrap <the driver's sandbox args> true`, spawned from here (no cgroups of its own);
//   driver   — ProcessDriver provision → exec(['true']) → dispose;
//   runner   — as driver, with the runner's steps between exec and dispose: usage → snapshot;
//   cgroups  — mkdir + rmdir of one sandbox's cgroups (memory, pids, cpuacct), nothing joins them;
//   cgjoin   — as cgroups, with a `true` process moved into them (cgroup.procs) before it runs: the
//              kernel's cost of a cgroup a process lived in, without bubblewrap;
//   memcg / pidscg / acctcg — as cgjoin with one controller's cgroup only.
// Also per phase: `elMean`/`elP99`/`elMax` — this process's event-loop delay (perf_hooks, ms), what a
// synchronous step (a dispose's rmdirs) costs the other sandboxes sharing the driver's thread.
// Usage: node packages/placement-process/bench/sandbox-cpu.mjs  (BENCH_N=400 BENCH_PHASES=raw,driver BENCH_REPEAT=3
// BENCH_BUILD_ROOT=/work/main for another checkout's build). Needs root (cgroups) and bubblewrap.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const root = process.env.BENCH_BUILD_ROOT ?? new URL('../../..', import.meta.url).pathname;
const pd = await import(pathToFileURL(join(root, 'packages/placement-process/dist/index.js')).href);
const placement = await import(pathToFileURL(join(root, 'packages/placement/dist/index.js')).href);
/** Ask for `out/` (the runner does) where the build has `directories`; an older build gets none. */
const DIRS = placement.ProvisionSpec.shape.directories !== undefined && process.env.BENCH_DIRS !== '0';
const N = Number(process.env.BENCH_N ?? 400);
const C = Number(process.env.BENCH_CONCURRENCY ?? 16);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 1);
const PHASES = (process.env.BENCH_PHASES ?? 'raw,driver,cgroups,cgjoin').split(',');
const CG = '/sys/fs/cgroup';
const TAG = `sbx-bench-${process.pid}`;
const TICK = 10; // ms per clock tick

function machine() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
  return {
    user: (user + nice) * TICK,
    system: system * TICK,
    irq: irq * TICK,
    softirq: softirq * TICK,
    steal: steal * TICK,
    idle: (idle + iowait) * TICK,
  };
}
/**
 * CPU (ms) of kernel threads: `all` — every child of kthreadd; `workers` — kworker/*, ksoftirqd/*, rcu*
 * only (where the kernel's deferred cgroup, RCU and softirq work runs; not the journal, kswapd, …).
 */
function kthreadCpu() {
  let all = 0;
  let workers = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const s = readFileSync(`/proc/${p}/stat`, 'utf8');
      const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (f[1] !== '2' && p !== '2') continue; // ppid 2: kthreadd's children
      const ms = (Number(f[11]) + Number(f[12])) * TICK;
      all += ms;
      if (/^(kworker\/|ksoftirqd\/|rcu)/.test(comm)) workers += ms;
    } catch {}
  }
  return { all, workers };
}
const kthreads = () => kthreadCpu().all;
const kworkers = () => kthreadCpu().workers;
/** This process's reaped children's CPU (ms): cutime + cstime of /proc/self/stat. */
function reapedMs() {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * TICK;
}
const diff = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, b[k] - a[k]]));

async function pool(n, c, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}
const run = (file, args, opts = {}) =>
  new Promise((resolve, reject) => {
    const p = spawn(file, args, { stdio: 'ignore', ...opts });
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))));
  });

const dir = mkdtempSync(join(tmpdir(), 'sbx-bench-'));
chmodSync(dir, 0o711);
const workspace = join(dir, 'ws');
mkdirSync(workspace);
chmodSync(workspace, 0o777);

/** A `true` held until moved into `dirs` (via sh: `read` blocks until we write). */
async function joinedTrue(dirs) {
  const p = spawn('sh', ['-c', 'read x; exec true'], { stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise((r) => p.once('spawn', r));
  for (const d of dirs) writeFileSync(`${d}/cgroup.procs`, String(p.pid));
  const exited = new Promise((r) => p.once('exit', r));
  p.stdin.end('go\n');
  await exited;
}
function cgDirs(name, controllers) {
  return controllers.map((c) => join(CG, c, TAG, name));
}
async function rmdirRetry(d) {
  for (let i = 0; ; i++) {
    try {
      rmdirSync(d);
      return;
    } catch (e) {
      if (e.code !== 'EBUSY' || i > 200) throw e;
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

async function driverPhase(n, phaseCg, dirs, runnerSteps = false) {
  const driver = new pd.ProcessDriver({
    stateDir: join(dir, `state-${phaseCg}`),
    imagesDir: join(dir, 'images'),
    slots: C,
    cgroupParent: `${TAG}/${phaseCg}/sandboxes`,
  });
  let seq = 0;
  await pool(n, C, async () => {
    const h = await driver.provision({
      labels: { tenant: 'bench', runId: `r-${seq++}`, kind: 'command' },
      ...(dirs ? { directories: ['out'] } : {}),
    });
    // the runner's command: with `directories`, the command alone; without, its `mkdir -p out` prologue
    const r = await driver.exec(h, dirs ? ['true'] : [...PROLOGUE, 'true']);
    if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
    if (runnerSteps) {
      await driver.usage(h);
      await driver.snapshot(h);
    }
    await driver.dispose(h);
  });
  driver.drainReadyPool();
  driver.spawner?.stop();
}

const PROLOGUE = ['sh', '-c', 'mkdir -p out && exec "$@"', 'sh'];
const phases = {
  raw: async (n) => {
    const args = [...pd.sandboxArgs({ kind: 'default' }, workspace, 'none'), '--chdir', '/workspace', 'true'];
    await pool(n, C, () => run(process.env.EVERDICT_BWRAP ?? 'bwrap', args));
  },
  rawsh: async (n) => {
    const args = [
      ...pd.sandboxArgs({ kind: 'default' }, workspace, 'none'),
      '--chdir',
      '/workspace',
      ...PROLOGUE,
      'true',
    ];
    await pool(n, C, () => run(process.env.EVERDICT_BWRAP ?? 'bwrap', args));
  },
  driver: (n, phaseCg) => driverPhase(n, phaseCg, DIRS),
  driversh: (n, phaseCg) => driverPhase(n, phaseCg, false),
  runner: (n, phaseCg) => driverPhase(n, phaseCg, DIRS, true),
  cgroups: (n) => cgPhase(n, ['memory', 'pids', 'cpuacct'], false),
  cgjoin: (n) => cgPhase(n, ['memory', 'pids', 'cpuacct'], true),
  memcg: (n) => cgPhase(n, ['memory'], true),
  pidscg: (n) => cgPhase(n, ['pids'], true),
  acctcg: (n) => cgPhase(n, ['cpuacct'], true),
  cgreuse: async (n) => {
    // 16 cgroup sets made once, each reused after its process left (what a pool of reused cgroups would
    // cost); the memory cgroup's usage left after each `true` is summed (the residue a reuse would carry)
    const sets = Array.from({ length: C }, (_, i) => cgDirs(`reuse${i}`, ['memory', 'pids', 'cpuacct']));
    for (const dirs of sets) for (const d of dirs) mkdirSync(d);
    const free = [...sets];
    let residue = 0;
    await pool(n, C, async () => {
      const dirs = free.pop();
      await joinedTrue(dirs);
      residue += Number(readFileSync(`${dirs[0]}/memory.usage_in_bytes`, 'utf8'));
      free.push(dirs);
    });
    for (const dirs of sets) for (const d of dirs) await rmdirRetry(d);
    console.error(
      `cgreuse: memory.usage_in_bytes left after a process, mean ${Math.round(residue / n)} bytes`,
    );
  },
  truejoin: async (n) => {
    await pool(n, C, () => joinedTrue([]));
  },
};
async function cgPhase(n, controllers, join) {
  let seq = 0;
  await pool(n, C, async () => {
    const dirs = cgDirs(`c${seq++}`, controllers);
    for (const d of dirs) mkdirSync(d);
    if (join) await joinedTrue(dirs);
    for (const d of dirs) await rmdirRetry(d);
  });
}

/** Where this process is now in a v1 hierarchy: it goes back there before the bench's cgroups are removed. */
function ownCgroup(controller) {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, cs, rel] = line.split(':');
    if (cs?.split(',').includes(controller)) return join(CG, controller, rel);
  }
  return join(CG, controller);
}
const home = Object.fromEntries(['memory', 'pids', 'cpuacct'].map((c) => [c, ownCgroup(c)]));
// The phase's own cgroup (cpuacct + the others the driver needs as parents)
for (const c of ['memory', 'pids', 'cpuacct', 'cpu']) mkdirSync(join(CG, c, TAG), { recursive: true });
const results = {};
try {
  for (let rep = 0; rep < REPEAT; rep++) {
    for (const phase of PHASES) {
      const name = `${phase}-${rep}`;
      for (const c of ['memory', 'pids', 'cpuacct', 'cpu'])
        mkdirSync(join(CG, c, TAG, name, 'sandboxes'), { recursive: true });
      const acct = join(CG, 'cpuacct', TAG, name);
      // idle phase: the machine's background rate
      const w0 = kworkers();
      const m0 = machine(),
        k0 = kthreads(),
        t0 = performance.now();
      await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_MS ?? 2000)));
      const w1 = kworkers();
      const m1 = machine(),
        k1 = kthreads(),
        t1 = performance.now();
      // this process into the phase's cgroups (everything it starts follows)
      for (const c of ['memory', 'pids', 'cpuacct'])
        writeFileSync(join(CG, c, TAG, name, 'cgroup.procs'), String(process.pid));
      const a0 = Number(readFileSync(`${acct}/cpuacct.usage`, 'utf8'));
      const sb0 = Number(readFileSync(`${acct}/sandboxes/cpuacct.usage`, 'utf8'));
      const s0 = process.cpuUsage();
      const r0 = reapedMs();
      const w2 = kworkers();
      const m2 = machine(),
        k2 = kthreads(),
        t2 = performance.now();
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      await phases[phase](N, name);
      loop.disable();
      await new Promise((r) => setTimeout(r, 300)); // deferred kernel work (offline cgroups, RCU) lands
      const w3 = kworkers();
      const m3 = machine(),
        k3 = kthreads(),
        t3 = performance.now();
      const a1 = Number(readFileSync(`${acct}/cpuacct.usage`, 'utf8'));
      const sb1 = Number(readFileSync(`${acct}/sandboxes/cpuacct.usage`, 'utf8'));
      const s1 = process.cpuUsage(s0);
      const r1 = reapedMs();
      for (const c of ['memory', 'pids', 'cpuacct'])
        writeFileSync(join(CG, c, TAG, 'cgroup.procs'), String(process.pid));
      const idleMs = t1 - t0,
        workMs = t3 - t2;
      const mi = diff(m0, m1),
        mw = diff(m2, m3);
      const busy = (m) => m.user + m.system + m.irq + m.softirq + m.steal;
      const per = (x) => Math.round((x / N) * 100) / 100;
      const bg = (k) => (mi[k] / idleMs) * workMs;
      const r = {
        perSec: Math.round((N / (workMs / 1000)) * 10) / 10,
        attributed: per((a1 - a0) / 1e6),
        self: per((s1.user + s1.system) / 1000),
        // children this process reaped (raw: the outer bubblewraps; driver: the spawner once stopped)
        reaped: per(r1 - r0),
        // the sandboxes' own cgroups (driver): every process of each sandbox, whoever reaps it
        sandboxCg: per((sb1 - sb0) / 1e6),
        kthreads: per(k3 - k2 - ((k1 - k0) / idleMs) * workMs),
        kworkers: per(w3 - w2 - ((w1 - w0) / idleMs) * workMs),
        machine: per(busy(mw) - (busy(mi) / idleMs) * workMs),
        user: per(mw.user - bg('user')),
        system: per(mw.system - bg('system')),
        softirq: per(mw.softirq + mw.irq - bg('softirq') - bg('irq')),
        bgCores: Math.round((busy(mi) / idleMs) * 100) / 100,
        elMean: Math.round(loop.mean / 1e4) / 100,
        elP99: Math.round(loop.percentile(99) / 1e4) / 100,
        elMax: Math.round(loop.max / 1e4) / 100,
      };
      results[phase] ??= [];
      results[phase].push(r);
      console.log(JSON.stringify({ phase, rep, ...r }));
    }
  }
} finally {
  for (const c of ['memory', 'pids', 'cpuacct'])
    writeFileSync(join(home[c], 'cgroup.procs'), String(process.pid));
  for (const c of ['memory', 'pids', 'cpuacct', 'cpu']) {
    const base = join(CG, c, TAG);
    const rmTree = (d) => {
      try {
        for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) rmTree(join(d, e.name));
        rmdirSync(d);
      } catch {}
    };
    rmTree(base);
  }
  rmSync(dir, { recursive: true, force: true });
}
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const summary = Object.fromEntries(
  Object.entries(results).map(([p, rs]) => [
    p,
    Object.fromEntries(Object.keys(rs[0]).map((k) => [k, med(rs.map((r) => r[k]))])),
  ]),
);
console.log(JSON.stringify({ n: N, concurrency: C, root, median: summary }, null, 1));
