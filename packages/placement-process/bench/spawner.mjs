// placement.process.spawner: what starting bubblewrap costs, by process, for each way of starting it —
// `inline` (child_process.spawn from the driver: libuv fork()s the whole process), `node` (the driver's
// Node spawner process forks it: `spawner: 'process', spawnerProgram: 'node'`) and `native` (the C spawner,
// `spawnerProgram: 'auto'` with a compiler here) — in ONE process carrying a runner-sized heap
// (BENCH_HEAP_MB, default 80 MB of live objects), alternating rounds of 16 concurrent provision → exec
// `true` → dispose. Prints `BENCH {json}`: runs/s of each, and CPU ms per run of this process
// (user+system), of the spawner (all its threads), and of the sandboxes (the reaped children of both), and
// one `ROUND {json}` line per round. Run: pnpm --filter @everdict/placement-process build &&
// node packages/placement-process/bench/spawner.mjs   Env: BENCH_N (runs per round, 64), BENCH_ROUNDS (3),
// BENCH_VARIANTS (comma-separated, default `inline,node,native`).
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
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'inline,node,native').split(',');
const configs = {
  inline: { spawner: 'inline' },
  node: { spawner: 'process', spawnerProgram: 'node' },
  native: { spawner: 'process', spawnerProgram: 'auto' },
};
const drivers = Object.fromEntries(
  VARIANTS.map((v) => [
    v,
    new ProcessDriver({ stateDir: join(dir, v), imagesDir: join(dir, 'images'), ...configs[v] }),
  ]),
);

/** CPU ms of a process: self (user + system) and its reaped children (/proc/<pid>/stat, 10 ms ticks). */
function cpu(pid) {
  if (pid === null) return { self: 0, system: 0, children: 0 };
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s
    .slice(s.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { self: (f[11] + f[12]) * 10, system: f[12] * 10, children: (f[13] + f[14]) * 10 };
}

/** A process's resident set (MB), or null. */
function rssMb(pid) {
  if (!pid) return null;
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1000);
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
  if (name === 'native' && driver.spawner?.program !== 'native')
    throw new Error('no native spawner (no cc?)');
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
  const fig = {
    name,
    perSec: N / seconds,
    driverMs: (me1.self - me0.self) / N,
    driverSystemMs: (me1.system - me0.system) / N,
    spawnerMs: (sp1.self - sp0.self) / N,
    sandboxesMs: (me1.children - me0.children + sp1.children - sp0.children) / N,
  };
  process.stdout.write(`ROUND ${JSON.stringify(fig)}\n`);
  return fig;
}

const sums = Object.fromEntries(VARIANTS.map((v) => [v, []]));
for (let r = 0; r < ROUNDS; r++)
  for (const name of r % 2 ? [...VARIANTS].reverse() : VARIANTS) sums[name].push(await round(name));
const mean = (xs, k) => Math.round((xs.reduce((a, x) => a + x[k], 0) / xs.length) * 10) / 10;
const fig = (name) => ({
  perSec: mean(sums[name], 'perSec'),
  driverCpuMsPerRun: mean(sums[name], 'driverMs'),
  driverSystemMsPerRun: mean(sums[name], 'driverSystemMs'),
  spawnerCpuMsPerRun: mean(sums[name], 'spawnerMs'),
  sandboxesCpuMsPerRun: mean(sums[name], 'sandboxesMs'),
});
const out = {
  name: 'placement.process.spawner',
  n: N,
  rounds: ROUNDS,
  rssMb: Math.round(process.memoryUsage().rss / 1e6),
  ...Object.fromEntries(
    VARIANTS.map((v) => [v, { ...fig(v), spawnerRssMb: rssMb(drivers[v].spawner?.pid) }]),
  ),
  loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
};
process.stdout.write(`BENCH ${JSON.stringify(out)}\n`);
ballast.length = 0;
for (const d of Object.values(drivers)) {
  d.spawner?.stop();
  d.drainReadyPool();
}
rmSync(dir, { recursive: true, force: true });
