// The v1 settle's check (limits/cgroup-v1.ts `settle`), its listing alone: the `tasks` files of a sandbox's
// three cgroups (memory, pids, cpuacct: before) against the cpuacct one's alone (now), on empty cgroups made
// here — what a settle after a command that left nothing costs. Prints the median of 5 rounds of 3000 checks
// each, CPU (process.cpuUsage) and wall per check, µs. Run as root on a cgroup v1 host:
//   node packages/placement-process/bench/settle-listing.mjs
import { mkdirSync, readFileSync, rmdirSync } from 'node:fs';

const dirs = ['memory', 'pids', 'cpuacct'].map((c) => `/sys/fs/cgroup/${c}/micro-${process.pid}`);
for (const d of dirs) mkdirSync(d);
const N = 3000;
const check = (files) => () => {
  const out = [];
  for (const f of files) out.push(...readFileSync(f, 'utf8').split('\n').filter(Boolean));
  return out.length === 0;
};
const three = check(dirs.map((d) => `${d}/tasks`)),
  one = check([`${dirs[2]}/tasks`]);
const res = { three: [], one: [] };
for (let r = 0; r < 5; r++)
  for (const [name, f] of [
    ['three', three],
    ['one', one],
  ]) {
    const c0 = process.cpuUsage(),
      t0 = performance.now();
    for (let i = 0; i < N; i++) f();
    const c = process.cpuUsage(c0);
    res[name].push([(c.user + c.system) / N, ((performance.now() - t0) * 1000) / N]);
  }
for (const d of dirs) rmdirSync(d);
const med = (xs) => xs.sort((a, b) => a - b)[2].toFixed(1);
for (const k of ['three', 'one'])
  console.log(k, 'cpu µs', med(res[k].map((x) => x[0])), 'wall µs', med(res[k].map((x) => x[1])));
