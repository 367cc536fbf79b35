#!/usr/bin/env node
// The shipped server's CPU profile on the http shape: `node --cpu-prof` of a built `dist/main.js` (argv[2],
// default this checkout's) while 16 keep-alive clients POST BENCH_RUNS (1000) `echo` analysis runs, after 100
// warm-up creates; then its top self and inclusive costs within the measured phase only (start-up and
// warm-up left out). Without BENCH_PROFILE_DIR it only prints CPU per run (server process and backends).
// Not a benchmark (server-cpu.mjs and dispatch.mjs are): where the server's time goes.
//   BENCH_PROFILE_DIR=/tmp/prof node apps/control-plane/bench/cpu-profile.mjs [dist/main.js]
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMeter, pool, shippedServer, until } from './lib/measure.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const main = process.argv[2] ?? path.join(here, '..', 'dist', 'main.js');
const profDir = process.env.BENCH_PROFILE_DIR;
const N = Number(process.env.BENCH_RUNS ?? 1000);

const interval = process.env.BENCH_PROFILE_INTERVAL; // µs between samples (node's default 1000)
const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const args = profDir
  ? [
      ...nodeArgs,
      '--cpu-prof',
      `--cpu-prof-dir=${profDir}`,
      ...(interval ? [`--cpu-prof-interval=${interval}`] : []),
      main,
    ]
  : [...nodeArgs, main];
const srv = await shippedServer(`bench_prof_${process.pid}`, args);
const { create, settled } = srv;
let window;
try {
  await pool(100, 16, create);
  await until(async () => (await settled()) >= 100);
  const cpu = await cpuMeter(srv.db, srv.srv.child.pid, [srv.watchPid]);
  const from = Number(process.hrtime.bigint() / 1000n); // the profile's clock: monotonic µs
  await pool(N, 16, create);
  await until(async () => (await settled()) >= 100 + N);
  const used = await cpu.take();
  window = [from, Number(process.hrtime.bigint() / 1000n)];
  const threads = Object.entries(used.threads)
    .map(([name, ms]) => `${name.trim()}=${(ms / N).toFixed(2)}`)
    .join(' ');
  console.log(
    `server=${(used.server / N).toFixed(2)} db=${(used.db / N).toFixed(2)} ms/run load=${loadavg()[0].toFixed(1)} threads: ${threads}`,
  );
} finally {
  await srv.close();
}
if (profDir && window) {
  const file = readdirSync(profDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .at(-1);
  const p = JSON.parse(readFileSync(path.join(profDir, file), 'utf8'));
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map();
  let t = p.startTime;
  p.samples.forEach((s, i) => {
    t += p.timeDeltas[i];
    if (t >= window[0] && t <= window[1]) hits.set(s, (hits.get(s) ?? 0) + 1);
  });
  const label = (n) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
  // The module a frame belongs to: a package under node_modules, a workspace package, node's own, or native.
  const moduleOf = (n) => {
    const url = n.callFrame.url;
    if (!url) return `(${n.callFrame.functionName || 'native'})`.replace('((', '(').replace('))', ')');
    const dep = url.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/);
    if (dep) return dep[1];
    if (url.startsWith('node:')) return 'node';
    const ws = url.match(/\/(apps|packages)\/([^/]+)\//);
    return ws ? `@everdict/${ws[2]}` : url;
  };
  const self = new Map();
  const incl = new Map();
  const byModule = new Map();
  let busy = 0;
  for (const [id, c] of hits) {
    if (nodes.get(id).callFrame.functionName === '(idle)') continue;
    busy += c;
    self.set(label(nodes.get(id)), (self.get(label(nodes.get(id))) ?? 0) + c);
    const mod = moduleOf(nodes.get(id));
    byModule.set(mod, (byModule.get(mod) ?? 0) + c);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(nodes.get(cur));
      if (seen.has(l)) continue;
      seen.add(l);
      incl.set(l, (incl.get(l) ?? 0) + c);
    }
  }
  const top = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 40)
      .map(([k, v]) => `${((100 * v) / busy).toFixed(1).padStart(5)}% ${k}`)
      .join('\n');
  console.log(
    `# ${file}: ${busy} busy samples in the measured phase\n== self\n${top(self)}\n== inclusive\n${top(incl)}\n== self by module\n${top(byModule)}`,
  );
}
