// placement.tar.write: the deterministic workspace archive + its BLAKE3 address, from entries in memory
// (1,000 files of 4 KiB in 50 directories, as a small workspace), against the raw baseline of hashing the
// same bytes concatenated (what any content address costs at least).
// placement.inline.exec: provision → exec → dispose of a registered function on the inline driver,
// against calling the function directly.
// Prints `BENCH {json}`. Run: pnpm --filter @everdict/placement build && pnpm --filter @everdict/placement bench
// Env: BENCH_ROUNDS (tar rounds, default 30), BENCH_EXECS (inline loops, default 20000).
import { blake3 } from '@everdict/runrecord';
import { InlineDriver, snapshotAddress, writeTar } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const EXECS = Number(process.env.BENCH_EXECS ?? 20_000);
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const entries = [];
for (let d = 0; d < 50; d++) entries.push({ type: 'directory', path: `src/dir-${d}`, mode: 0o755 });
for (let f = 0; f < 1000; f++) {
  const data = new Uint8Array(4096).map((_, i) => (i * 31 + f) & 0xff);
  entries.push({ type: 'file', path: `src/dir-${f % 50}/file-${f}.txt`, mode: 0o644, data });
}
const payload = entries.reduce((n, e) => n + (e.data?.byteLength ?? 0), 0);

const tarTimes = [];
const rawTimes = [];
let tarBytes = 0;
for (let r = 0; r < ROUNDS + 3; r++) {
  let t = performance.now();
  const tar = await writeTar(entries.slice().reverse());
  snapshotAddress(tar);
  const tarMs = performance.now() - t;
  t = performance.now();
  blake3(Buffer.concat(entries.filter((e) => e.data).map((e) => e.data)));
  const rawMs = performance.now() - t;
  if (r >= 3) {
    tarTimes.push(tarMs);
    rawTimes.push(rawMs);
  }
  tarBytes = tar.byteLength;
}
const mib = payload / (1024 * 1024);
console.log(
  `BENCH ${JSON.stringify({
    name: 'placement.tar.write',
    files: 1000,
    payload_bytes: payload,
    tar_bytes: tarBytes,
    ms: round(median(tarTimes)),
    mib_per_s: round(mib / (median(tarTimes) / 1000)),
    raw_hash_ms: round(median(rawTimes)),
    ratio_to_raw_hash: round(median(rawTimes) / median(tarTimes), 3),
  })}`,
);

const fn = ({ args }) => ({ stdout: args[0] });
const driver = new InlineDriver({ functions: { echo: fn } });
const labels = { tenant: 'bench', runId: '', kind: 'command' };
let t = performance.now();
for (let i = 0; i < EXECS; i++) {
  const h = await driver.provision({ labels: { ...labels, runId: `r${i}` } });
  await driver.exec(h, ['echo', 'x']);
  await driver.dispose(h);
}
const driverMs = performance.now() - t;
t = performance.now();
for (let i = 0; i < EXECS; i++) await fn({ args: ['x'] });
const directMs = performance.now() - t;
console.log(
  `BENCH ${JSON.stringify({
    name: 'placement.inline.exec',
    n: EXECS,
    per_s: round((1000 * EXECS) / driverMs),
    direct_call_per_s: round((1000 * EXECS) / directMs),
    ratio_to_direct_call: round(directMs / driverMs, 4),
  })}`,
);
