// placement.process.files-memory: what reading a run's out/ costs in memory — `files` (streamed, file by file)
// against `snapshot` + `readTar` (the whole workspace archive in memory, then parsed: how the runner read out/
// before) — for one out/ file of BENCH_MIB MiB (256), each in a fresh child process of its own so neither
// inherits the other's heap. Both hash every byte (SHA-256), which must be the file's. Prints one line per way and the
// ratios files/snapshot (< 1: less). Peak RSS is sampled every 5 ms above the child's RSS before the read.
// Run: pnpm --filter @everdict/placement-process build && node packages/placement-process/bench/files-memory.mjs
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MIB = Number(process.env.BENCH_MIB ?? 256);

async function child(way) {
  const { ProcessDriver } = await import('../dist/index.js');
  const { readTar } = await import('@everdict/placement');
  const dir = mkdtempSync(join(tmpdir(), 'everdict-bench-files-'));
  chmodSync(dir, 0o711);
  const driver = new ProcessDriver({
    stateDir: join(dir, 'state'),
    slots: 1,
    snapshotCapBytes: 4 * 1024 ** 3,
  });
  const h = await driver.provision({
    labels: { tenant: 'b', runId: way, kind: 'command' },
    directories: ['out'],
  });
  const made = await driver.exec(
    h,
    ['sh', '-c', `head -c ${MIB * 1024 * 1024} /dev/urandom > out/big.bin && sha256sum out/big.bin`],
    {
      timeoutMs: 600_000,
    },
  );
  if (made.exitCode !== 0) throw new Error('could not write out/big.bin');
  const written = Buffer.from(made.stdout).toString('utf8').split(' ')[0];
  globalThis.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const t0 = performance.now();
  const hash = createHash('sha256');
  let bytes = 0;
  if (way === 'files') {
    for await (const f of driver.files(h, 'out')) {
      for await (const c of f.content) {
        hash.update(c);
        bytes += c.byteLength;
      }
    }
  } else {
    const snap = await driver.snapshot(h);
    for (const e of await readTar(snap.bytes, { skipSpecial: true })) {
      if (e.type !== 'file' || !e.path.startsWith('out/')) continue;
      const body = Buffer.from(e.data); // the runner's upload body
      hash.update(body);
      bytes += body.byteLength;
    }
  }
  const ms = performance.now() - t0;
  peak = Math.max(peak, process.memoryUsage().rss);
  clearInterval(sampler);
  await driver.dispose(h);
  rmSync(dir, { recursive: true, force: true });
  if (hash.digest('hex') !== written) throw new Error(`${way}: read other bytes than were written`);
  process.send({
    way,
    bytes,
    peakRssMiB: Math.round((peak - base) / 2 ** 20),
    ms: Math.round(ms),
  });
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]);
  process.exit(0);
}
const results = {};
for (const way of ['snapshot', 'files']) {
  const p = fork(fileURLToPath(import.meta.url), ['--child', way], { execArgv: ['--expose-gc'] });
  results[way] = await new Promise((resolve, reject) => {
    p.once('message', resolve);
    p.once('exit', (code) => code !== 0 && reject(new Error(`${way} child exited ${code}`)));
  });
  process.stdout.write(`WAY ${JSON.stringify(results[way])}\n`);
}
const ratio = (k) => Math.round((results.files[k] / results.snapshot[k]) * 1000) / 1000;
process.stdout.write(
  `BENCH ${JSON.stringify({ name: 'placement.process.files-memory', mib: MIB, files: results.files, snapshot: results.snapshot, ratio: { peakRss: ratio('peakRssMiB'), ms: ratio('ms') } })}\n`,
);
