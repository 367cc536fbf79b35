// One size of the `trajectory.append` bench, in its own process (so its peak RSS is its own):
//   node --expose-gc bench/append.mjs <events> [batch]
// Appends <events> TraceEvents in batches to a local-directory store and seals them, then runs the raw
// baseline — the same events serialized and gzip-appended to one file — and prints one JSON line.
import { open, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { constants, gzip } from 'node:zlib';
import { localBackend, TrajectoryStore } from '../dist/index.js';
import { sampleEvents } from './events.mjs';

const N = Number(process.argv[2] ?? 1_000_000);
const BATCH = Number(process.argv[3] ?? 1000);
const gzipAsync = promisify(gzip);
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-append-'));

async function storeRun(method) {
  const store = new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'store') }) });
  const t0 = performance.now();
  for (let seq = 0; seq < N; seq += BATCH) await store[method]('bench', 'run-1', sampleEvents('run-1', seq, Math.min(BATCH, N - seq)));
  const t1 = performance.now();
  const { seal } = await store.seal('bench', 'run-1');
  const t2 = performance.now();
  await store.close();
  return { appendMs: t1 - t0, sealMs: t2 - t1, bytes: seal.bytes, storedBytes: seal.storedBytes, digest: seal.digest };
}

async function rawRun() {
  const handle = await open(path.join(dir, 'raw.jsonl.gz'), 'w');
  let bytes = 0;
  const t0 = performance.now();
  for (let seq = 0; seq < N; seq += BATCH) {
    const events = sampleEvents('run-1', seq, Math.min(BATCH, N - seq));
    let text = '';
    for (const e of events) text += `${JSON.stringify(e)}\n`;
    bytes += Buffer.byteLength(text);
    await handle.write(await gzipAsync(Buffer.from(text), { level: constants.Z_DEFAULT_COMPRESSION }));
  }
  await handle.close();
  return { ms: performance.now() - t0, bytes };
}

const method = process.argv[4] ?? 'appendTrusted';
const raw0 = await rawRun();
const store = await storeRun(method);
const storeRssMb = process.resourceUsage().maxRSS / 1024;
const raw1 = await rawRun();
const raw = { ms: Math.min(raw0.ms, raw1.ms), bytes: raw0.bytes };
await rm(dir, { recursive: true, force: true });
console.log(JSON.stringify({ n: N, batch: BATCH, store, storeRssMb, raw }));
