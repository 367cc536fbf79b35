// placement.process.spawner: what starting bubblewrap costs the driver's process, `spawner: 'inline'`
// (child_process.spawn from the driver: libuv fork()s the whole process) against `spawner: 'process'`
// (the driver's small spawner process forks it), in ONE process carrying a runner-sized heap (BENCH_HEAP_MB,
// default 80 MB of live objects), alternating rounds of 16 concurrent provision → exec `true` → dispose.
// Prints `BENCH {json}`: runs/s of each, and CPU ms per run of this process (user+system), of the spawner,
// and of the sandboxes (reaped children). Run: pnpm --filter @everdict/placement-process build &&
// node packages/placement-process/bench/spawner.mjs   Env: BENCH_N (runs per round, 64), BENCH_ROUNDS (3).
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '../dist/index.js';

const N = Number(process.env.BENCH_N ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HEAP_MB = Number(process.env.BENCH_HEAP_MB ?? 80);
const ballast = [];
for (let i = 0; i < HEAP_MB * 10; i++) ballast.push(Array.from({ length: 2500 }, (_, j) => ({ j })));

const dir = mkdtempSync(join(tmpdir(), 'everdict-bench-spawner-'));
chmodSync(dir, 0o711);
const drivers = {
  inline: new ProcessDriver({
    stateDir: join(dir, 'inline'),
    imagesDir: join(dir, 'images'),
    spawner: 'inline',
  }),
  process: new ProcessDriver({
    stateDir: join(dir, 'process'),
    imagesDir: join(dir, 'images'),
    spawner: 'process',
  }),
};

/** CPU ms of a process: self (user + system) and its reaped children (/proc/<pid>/stat, 10 ms ticks). */
function cpu(pid) {
  if (pid === null) return { self: 0, children: 0 };
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s
    .slice(s.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { self: (f[11] + f[12]) * 10, children: (f[13] + f[14]) * 10 };
}

let seq = 0;
async function round(name) {
  const driver = drivers[name];
  const one = async () => {
    const h = await driver.provision({ labels: { tenant: 'bench', runId: `s-${seq++}`, kind: 'command' } });
    const r = await driver.exec(h, ['true']);
    if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
    await driver.dispose(h);
  };
  await one(); // the spawner started
  const spawner = driver.spawner?.pid ?? null;
  const [me0, sp0] = [cpu(process.pid), cpu(spawner)];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < N) await one();
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const [me1, sp1] = [cpu(process.pid), cpu(spawner)];
  return {
    perSec: N / seconds,
    driverMs: (me1.self - me0.self) / N,
    spawnerMs: (sp1.self - sp0.self) / N,
    sandboxesMs: (me1.children - me0.children + sp1.children - sp0.children) / N,
  };
}

const sums = { inline: [], process: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const name of r % 2 ? ['process', 'inline'] : ['inline', 'process'])
    sums[name].push(await round(name));
const mean = (xs, k) => Math.round((xs.reduce((a, x) => a + x[k], 0) / xs.length) * 10) / 10;
const fig = (name) => ({
  perSec: mean(sums[name], 'perSec'),
  driverCpuMsPerRun: mean(sums[name], 'driverMs'),
  spawnerCpuMsPerRun: mean(sums[name], 'spawnerMs'),
  sandboxesCpuMsPerRun: mean(sums[name], 'sandboxesMs'),
});
const out = {
  name: 'placement.process.spawner',
  n: N,
  rounds: ROUNDS,
  rssMb: Math.round(process.memoryUsage().rss / 1e6),
  spawnerRssMb: drivers.process.spawner?.pid
    ? Math.round(
        Number(
          /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${drivers.process.spawner.pid}/status`, 'utf8'))[1],
        ) / 1000,
      )
    : null,
  inline: fig('inline'),
  process: fig('process'),
  loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
};
out.ratio = Math.round((out.process.perSec / out.inline.perSec) * 100) / 100;
process.stdout.write(`BENCH ${JSON.stringify(out)}\n`);
ballast.length = 0;
drivers.process.spawner?.stop();
rmSync(dir, { recursive: true, force: true });
