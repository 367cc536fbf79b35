// placement.process.runner-cpu: CPU per command on the runner's hot path, this build against another
// checkout's build (BENCH_BUILD_ROOT, e.g. a worktree of d32ac89) in the same process, alternating rounds.
// Each round: 16 concurrent loops of what apps/runner's interval does with the process driver
// (`new ProcessDriver({slots: 16})`, no limits given): provision({labels, network: 'none', directories:
// ['out']}) → stream(['true']) with its stdin ended at once → usage → out/'s files (`files`; a build
// without it: `snapshot`) → dispose.
// Per command: `driver` — this process's user+sys (process.cpuUsage, µs); `spawner` — the spawner's own
// user+sys, `bwrap` — its reaped children's (bubblewraps; /proc/<spawner>/stat, 10 ms ticks); `wall` — the
// round's wall time / N. Prints each round, then medians over the pairs and ratios this/other (< 1: less).
// Run: pnpm --filter @everdict/placement-process build &&
//   BENCH_BUILD_ROOT=/tmp/old-d32 node packages/placement-process/bench/runner-cpu.mjs
// Env: BENCH_N (commands per round, 320), BENCH_PAIRS (5), BENCH_SNAPSHOT=0 (skip the out/ step),
// BENCH_ONLY=this|other (one build alone).
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N = Number(process.env.BENCH_N ?? 320);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 5);
const SNAPSHOT = process.env.BENCH_SNAPSHOT !== '0';
const builds = { this: await import('../dist/index.js') };
if (process.env.BENCH_BUILD_ROOT) {
  builds.other = await import(join(process.env.BENCH_BUILD_ROOT, 'packages/placement-process/dist/index.js'));
}
const dir = mkdtempSync(join(tmpdir(), 'everdict-bench-cpu-'));
chmodSync(dir, 0o711);
const drivers = Object.fromEntries(
  Object.entries(builds).map(([k, m]) => [k, new m.ProcessDriver({ stateDir: join(dir, k), slots: 16 })]),
);

/** [own, reaped children's] CPU ms of a process (/proc stat: utime+stime, cutime+cstime), or zeros. */
function procCpu(pid) {
  if (!pid) return [0, 0];
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s
    .slice(s.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return [(f[11] + f[12]) * 10, (f[13] + f[14]) * 10];
}

let seq = 0;
async function round(name) {
  const driver = drivers[name];
  const sp0 = procCpu(driver.spawner?.pid);
  const me0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < N) {
        const h = await driver.provision({
          labels: { tenant: 'b', runId: `r${seq++}`, kind: 'command' },
          network: 'none',
          directories: ['out'],
        });
        const s = await driver.stream(h, ['true']);
        s.stdin.end();
        s.stdout.resume();
        s.stderr.resume();
        const exit = await s.exit;
        if (exit.exitCode !== 0) throw new Error(`exited ${exit.exitCode}`);
        await driver.usage(h);
        // out/'s files as the runner reads them: `files` where the build has it, its snapshot before
        if (SNAPSHOT && driver.files) for await (const f of driver.files(h, 'out')) f.content.resume();
        else if (SNAPSHOT) await driver.snapshot(h);
        await driver.dispose(h);
      }
    }),
  );
  const wall = performance.now() - t0;
  const me = process.cpuUsage(me0);
  const sp1 = procCpu(driver.spawner?.pid);
  const per = (x) => Math.round((x / N) * 1000) / 1000;
  return {
    build: name,
    driver: per((me.user + me.system) / 1000),
    spawner: per(sp1[0] - sp0[0]),
    bwrap: per(sp1[1] - sp0[1]),
    wall: per(wall),
    loadavg: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
  };
}

// BENCH_ONLY=this|other: one build's rounds alone (for a profile of it: node --cpu-prof)
const names = Object.keys(drivers).filter((n) => !process.env.BENCH_ONLY || n === process.env.BENCH_ONLY);
for (const name of names) await round(name); // warm: spawners started and compiled, pools filled, code hot
const all = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < PAIRS; r++) {
  for (const name of r % 2 ? [...names].reverse() : names) {
    const x = await round(name);
    all[name].push(x);
    process.stdout.write(`ROUND ${JSON.stringify(x)}\n`);
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const keys = ['driver', 'spawner', 'bwrap', 'wall'];
const medians = Object.fromEntries(
  names.map((n) => [n, Object.fromEntries(keys.map((k) => [k, median(all[n].map((x) => x[k]))]))]),
);
const out = { name: 'placement.process.runner-cpu', n: N, pairs: PAIRS, snapshot: SNAPSHOT, medians };
if (all.other && all.this) {
  // per pair this/other, then the median of those ratios
  out.ratio = Object.fromEntries(
    [...keys, 'driver+spawner'].map((k) => {
      const v = (x) => (k === 'driver+spawner' ? x.driver + x.spawner : x[k]);
      const rs = all.this.map((x, i) => v(x) / v(all.other[i]));
      return [k, Math.round(median(rs) * 1000) / 1000];
    }),
  );
}
process.stdout.write(`BENCH ${JSON.stringify(out)}\n`);
for (const d of Object.values(drivers)) {
  d.spawner?.stop();
  d.drainReadyPool?.();
}
rmSync(dir, { recursive: true, force: true });
