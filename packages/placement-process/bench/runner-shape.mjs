// placement.process.runner-shape: the runner's use of the driver without the runner — 16 concurrent loops of
// provision → stream(`sh -c 'mkdir -p out && exec "$@"' sh true`) → usage → dispose (a command run's
// interval, apps/runner/src/interval.ts) — for this build and, with BENCH_BUILD_ROOT, another checkout's
// built driver in the same process, in alternating rounds. Prints one line per round and the means:
// runs/s, step means (ms), CPU ms per run of this process and of the spawner (/proc, 10 ms ticks).
// Run: pnpm --filter @everdict/placement-process build &&
//   BENCH_BUILD_ROOT=/work/main node packages/placement-process/bench/runner-shape.mjs
// Env: BENCH_N (runs per round, 160), BENCH_ROUNDS (4).
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N = Number(process.env.BENCH_N ?? 160);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const builds = { this: await import('../dist/index.js') };
if (process.env.BENCH_BUILD_ROOT) {
  builds.other = await import(join(process.env.BENCH_BUILD_ROOT, 'packages/placement-process/dist/index.js'));
}
const dir = mkdtempSync(join(tmpdir(), 'everdict-bench-shape-'));
chmodSync(dir, 0o711);
const drivers = Object.fromEntries(
  Object.entries(builds).map(([k, m]) => [k, new m.ProcessDriver({ stateDir: join(dir, k), slots: 16 })]),
);

/** CPU ms of a process (user + system), or 0 without one. */
function cpu(pid) {
  if (!pid) return 0;
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s
    .slice(s.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return (f[11] + f[12]) * 10;
}

let seq = 0;
async function round(name) {
  const driver = drivers[name];
  const steps = { provision: [], command: [], dispose: [] };
  const sp0 = cpu(driver.spawner?.pid);
  const me0 = cpu(process.pid);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < N) {
        const a = performance.now();
        const h = await driver.provision({ labels: { tenant: 'b', runId: `r${seq++}`, kind: 'command' } });
        const b = performance.now();
        const s = await driver.stream(h, ['sh', '-c', 'mkdir -p out && exec "$@"', 'sh', 'true']);
        s.stdin.end();
        s.stdout.resume();
        s.stderr.resume();
        const exit = await s.exit;
        if (exit.exitCode !== 0) throw new Error(`exited ${exit.exitCode}`);
        const c = performance.now();
        await driver.usage(h);
        await driver.dispose(h);
        steps.provision.push(b - a);
        steps.command.push(c - b);
        steps.dispose.push(performance.now() - c);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const mean = (xs) => Math.round((xs.reduce((x, y) => x + y, 0) / xs.length) * 10) / 10;
  return {
    build: name,
    perSec: Math.round((N / seconds) * 10) / 10,
    provisionMs: mean(steps.provision),
    commandMs: mean(steps.command),
    disposeMs: mean(steps.dispose),
    driverCpuMs: Math.round(((cpu(process.pid) - me0) / N) * 100) / 100,
    spawnerCpuMs: Math.round(((cpu(driver.spawner?.pid) - sp0) / N) * 100) / 100,
    loadavg: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
  };
}

const names = Object.keys(drivers);
for (const name of names) await round(name); // warm: spawners started, pools filled, code hot
const all = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 ? [...names].reverse() : names) {
    const x = await round(name);
    all[name].push(x);
    process.stdout.write(`ROUND ${JSON.stringify(x)}\n`);
  }
}
const means = Object.fromEntries(
  names.map((n) => {
    const m = (k) => Math.round((all[n].reduce((a, x) => a + x[k], 0) / all[n].length) * 100) / 100;
    return [
      n,
      {
        perSec: m('perSec'),
        provisionMs: m('provisionMs'),
        commandMs: m('commandMs'),
        disposeMs: m('disposeMs'),
        driverCpuMs: m('driverCpuMs'),
        spawnerCpuMs: m('spawnerCpuMs'),
      },
    ];
  }),
);
const out = { name: 'placement.process.runner-shape', n: N, rounds: ROUNDS, ...means };
if (means.other) out.ratio = Math.round((means.this.perSec / means.other.perSec) * 100) / 100;
process.stdout.write(`BENCH ${JSON.stringify(out)}\n`);
for (const d of Object.values(drivers)) {
  d.spawner?.stop();
  d.drainReadyPool?.();
}
rmSync(dir, { recursive: true, force: true });
