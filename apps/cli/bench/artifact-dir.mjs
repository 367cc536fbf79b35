#!/usr/bin/env node
// Benchmark `artifact.dir`: `everdict artifact <run> --dir DIR` for a run that left BENCH_FILES (default 2,000)
// small files (≈ 1 KiB each) under out/, on the main job as a user runs it (`everdict start`: PGlite, the local
// trajectories directory, the embedded runner on the process driver, in a fresh data directory) — through the
// run's archive (one request, `GET /runs/:id/artifacts.tar`) against each file by its own request, eight at a
// time (`EVERDICT_ARTIFACT_ARCHIVE=0`: what the CLI did before, and does against a control plane without the
// route). Both sides are the built CLI as a child process, into a fresh directory each time, every file verified;
// BENCH_ROUNDS (default 4) interleaved rounds, the side that goes first alternating.
// Prints `BENCH artifact.dir files_per_s=… baseline=… ratio=…` (medians; ratio > 1: faster than the baseline).
//
// Needs the built CLI, control plane and runner (`pnpm build`) and bubblewrap.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FILES = Number(process.env.BENCH_FILES ?? 2000);
const ROUNDS = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 4));
const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(tmpdir(), 'bench-artifact-dir-'));
const job = spawn(process.execPath, [CLI, 'start', '--port', '0', '--data-dir', join(dir, 'data')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let printed = '';
const env = await new Promise((resolve, reject) => {
  job.stdout.on('data', (b) => {
    printed += b;
    const m = /export EVERDICT_URL=(\S+) EVERDICT_API_KEY=(\S+)/.exec(printed);
    if (m) resolve({ ...process.env, EVERDICT_URL: m[1], EVERDICT_API_KEY: m[2] });
  });
  job.once('exit', (code) => reject(new Error(`everdict start exited ${code}: ${printed}`)));
});

/** The built CLI with `args`; resolves with its stdout, rejects unless it exits 0. */
function everdict(args, extra = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`everdict ${args.join(' ')}: ${code} ${err.slice(-500)}`)),
    );
  });
}

try {
  const script = `mkdir -p out/d; i=0; while [ $i -lt ${FILES} ]; do head -c 1024 /dev/urandom > out/d/f$i.bin; i=$((i+1)); done`;
  const made = JSON.parse(await everdict(['run', 'command', '--wait', '--json', '--', 'sh', '-c', script]));
  const runId = made.id ?? made.run?.id;
  if (made.status !== 'succeeded' || made.outputs?.artifacts?.length !== FILES)
    throw new Error(`the run left ${made.outputs?.artifacts?.length} of ${FILES} files (${made.status})`);

  let n = 0;
  const side = async (archive) => {
    const into = join(dir, `into-${n++}`);
    const t0 = performance.now();
    await everdict(['artifact', runId, '--dir', into], archive ? {} : { EVERDICT_ARTIFACT_ARCHIVE: '0' });
    const seconds = (performance.now() - t0) / 1000;
    const got = readdirSync(join(into, 'd')).length;
    if (got !== FILES) throw new Error(`${got} of ${FILES} files fetched`);
    rmSync(into, { recursive: true, force: true });
    return FILES / seconds;
  };
  await side(true); // warm-up: the server's code, the store's pages
  await side(false);
  const ours = [];
  const base = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [true, false] : [false, true];
    for (const archive of order) (archive ? ours : base).push(await side(archive));
  }
  const rounds = ours.map((o, i) => Math.round((o / base[i]) * 100) / 100);
  console.log(
    `BENCH artifact.dir files_per_s=${Math.round(median(ours))} baseline=${Math.round(median(base))} ratio=${median(rounds)} rounds=[${rounds}] files=${FILES} baseline_side=each_alone_8_in_flight`,
  );
} finally {
  job.kill('SIGINT');
  await new Promise((r) => job.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
