// placement.process.exec: provision → exec `true` → dispose through the driver, side by side with a raw
// `bwrap … true` spawn loop (the same namespaces, root filesystem and workspace bind, no driver) in the
// same process. The two loops alternate iteration by iteration, so load on the machine hits both alike.
// Prints `BENCH {json}`. Run: pnpm --filter @everdict/placement-process build && pnpm --filter @everdict/placement-process bench
// Env: BENCH_N (iterations of each loop, default 200), BENCH_WARMUP (default 10).
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver, sandboxArgs } from '../dist/index.js';

const N = Number(process.env.BENCH_N ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 10);
const dir = mkdtempSync(join(tmpdir(), 'everdict-bench-'));
chmodSync(dir, 0o711);
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images') });
const root = process.getuid?.() === 0;
const user = root ? { uid: driver.config.sandboxUid, gid: driver.config.sandboxGid } : {};

const rawWorkspace = join(dir, 'raw-ws');
mkdirSync(rawWorkspace, { mode: 0o700 });
if (root) chownSync(rawWorkspace, driver.config.sandboxUid, driver.config.sandboxGid);
const rawArgs = [
  ...sandboxArgs({ kind: 'default', ref: 'default', digest: null }, rawWorkspace, 'none'),
  '--chdir',
  '/workspace',
  '--',
  'true',
];

function rawOnce() {
  return new Promise((resolve, reject) => {
    const c = spawn(driver.config.bwrap, rawArgs, {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
      ...user,
    });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`raw bwrap exited ${code}`))));
  });
}

let run = 0;
async function driverOnce() {
  const h = await driver.provision({ labels: { tenant: 'bench', runId: `b-${run++}`, kind: 'command' } });
  const r = await driver.exec(h, ['true']);
  if (r.exitCode !== 0) throw new Error(`exec true exited ${r.exitCode}`);
  await driver.dispose(h);
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

for (let i = 0; i < WARMUP; i++) {
  await rawOnce();
  await driverOnce();
}
const raw = [];
const full = [];
for (let i = 0; i < N; i++) {
  let t = performance.now();
  await rawOnce();
  raw.push(performance.now() - t);
  t = performance.now();
  await driverOnce();
  full.push(performance.now() - t);
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const perS = (xs) => (1000 * xs.length) / sum(xs);
const line = {
  name: 'placement.process.exec',
  n: N,
  mechanism: driver.describe().mechanism,
  p50_ms: round(quantile(full, 0.5)),
  p99_ms: round(quantile(full, 0.99)),
  per_s: round(perS(full)),
  raw_bwrap_p50_ms: round(quantile(raw, 0.5)),
  raw_bwrap_p99_ms: round(quantile(raw, 0.99)),
  raw_bwrap_per_s: round(perS(raw)),
  ratio_to_raw_bwrap: round(perS(full) / perS(raw), 3),
};
console.log(`BENCH ${JSON.stringify(line)}`);
rmSync(dir, { recursive: true, force: true });
