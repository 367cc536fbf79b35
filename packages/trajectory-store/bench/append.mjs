// One size of the `trajectory.append` bench, in its own process (so its peak RSS is its own):
//   node --expose-gc bench/append.mjs <events> [batch] [appendTrusted|append] [store-only]
// The store appends <events> TraceEvents in batches to a local-directory store and seals them. The raw
// baseline does the least that stores the same bytes: each batch serialized to JSONL and gzip-appended
// (same level, same async zlib) to one open file. Both make their events per batch (same generator), so
// neither holds more than a batch. Each baseline runs before and after the store; its faster run counts.
// Wall time and process CPU time (all threads, zlib's pool included) are both reported.
import { mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { constants, gzip } from 'node:zlib';
import { sampleEvents } from '../dist/fixtures.js';
import { canonicalLine, localBackend, TrajectoryStore } from '../dist/index.js';

const N = Number(process.argv[2] ?? 1_000_000);
const BATCH = Number(process.argv[3] ?? 1000);
const METHOD = process.argv[4] ?? 'appendTrusted';
const gzipAsync = promisify(gzip);
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-append-'));

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function storeRun() {
  const store = new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'store') }) });
  const [t0, c0] = [performance.now(), cpuMs()];
  for (let seq = 0; seq < N; seq += BATCH)
    await store[METHOD]('bench', 'run-1', sampleEvents('run-1', seq, Math.min(BATCH, N - seq)));
  const t1 = performance.now();
  const { seal } = await store.seal('bench', 'run-1');
  const [t2, c2] = [performance.now(), cpuMs()];
  await store.close();
  return {
    ms: t2 - t0,
    cpuMs: c2 - c0,
    appendMs: t1 - t0,
    sealMs: t2 - t1,
    bytes: seal.bytes,
    storedBytes: seal.storedBytes,
  };
}

async function rawRun(file, line) {
  const handle = await open(path.join(dir, file), 'w');
  let bytes = 0;
  const [t0, c0] = [performance.now(), cpuMs()];
  for (let seq = 0; seq < N; seq += BATCH) {
    const events = sampleEvents('run-1', seq, Math.min(BATCH, N - seq));
    let text = '';
    for (const e of events) text += line(e);
    bytes += Buffer.byteLength(text);
    await handle.write(await gzipAsync(Buffer.from(text), { level: constants.Z_DEFAULT_COMPRESSION }));
  }
  await handle.close();
  return { ms: performance.now() - t0, cpuMs: cpuMs() - c0, bytes };
}

// Two baselines: the same bytes the store writes (canonical JSONL, serialized in the loop with the
// package's own canonicalLine), and JSON.stringify lines (same size, keys in insertion order).
const WITH_RAW = process.argv[5] !== 'store-only';
const none = { ms: Number.POSITIVE_INFINITY, cpuMs: Number.POSITIVE_INFINITY, bytes: 0 };
const stringifyLine = (e) => `${JSON.stringify(e)}\n`;
const raws = { same: [], stringify: [] };
const rawPair = async (tag) => {
  if (!WITH_RAW) return;
  raws.same.push(await rawRun(`raw-same-${tag}.jsonl.gz`, canonicalLine));
  raws.stringify.push(await rawRun(`raw-stringify-${tag}.jsonl.gz`, stringifyLine));
};
await rawPair('before');
const store = await storeRun();
const peakRssMb = process.resourceUsage().maxRSS / 1024;
await rawPair('after');
await rm(dir, { recursive: true, force: true });
const best = (runs) =>
  runs.length === 0
    ? none
    : {
        ms: Math.min(...runs.map((r) => r.ms)),
        cpuMs: Math.min(...runs.map((r) => r.cpuMs)),
        bytes: runs[0].bytes,
      };
const raw = best(raws.same);
const rawStringify = best(raws.stringify);
console.log(JSON.stringify({ n: N, batch: BATCH, method: METHOD, store, raw, rawStringify, peakRssMb }));
