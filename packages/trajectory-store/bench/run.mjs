// Trajectory store figures, printed as `BENCH {json}` lines.
//   trajectory.append            events/s appended and sealed (1M events, batches of 1000, events already
//                                parsed: appendTrusted), next to a raw gzip append-to-file loop of the same
//                                events in the same process; peak RSS of a 10k run and of a 1M run.
//   trajectory.append.validated  the same through `append` (zod-parses every event), at BENCH_VALIDATED_N.
//   trajectory.otlp.decode       spans/s decoded from an OTLP protobuf request and mapped to TraceEvents,
//                                next to protobufjs decoding the same bytes alone.
// Run: pnpm --filter @everdict/trajectory-store build && pnpm --filter @everdict/trajectory-store bench
// Env: BENCH_N (default 1000000), BENCH_SMALL_N (10000), BENCH_MID_N (100000), BENCH_VALIDATED_N (200000).
// Peak RSS is each run's own process high-water mark (the 10k and 100k runs skip the baseline: store only).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { decodeOtlpProtobuf, spansToDrafts } from '../dist/index.js';
import { otlpRequestBytes, rawDecode } from './otlp-payload.mjs';

const N = Number(process.env.BENCH_N ?? 1_000_000);
const SMALL = Number(process.env.BENCH_SMALL_N ?? 10_000);
const MID = Number(process.env.BENCH_MID_N ?? 100_000);
const RSS_HEAP_CAP_MB = 64;
const VALIDATED = Number(process.env.BENCH_VALIDATED_N ?? 200_000);
const child = fileURLToPath(new URL('./append.mjs', import.meta.url));

function runSize(n, method, mode = 'with-raw', heapCapMb = 0) {
  const cap = heapCapMb ? [`--max-old-space-size=${heapCapMb}`] : [];
  const args = ['--expose-gc', ...cap, child, String(n), '1000', method, mode];
  const out = execFileSync(process.execPath, args, { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

function line(name, r, extra = {}) {
  const eps = Math.round((r.n / r.store.ms) * 1000);
  const rawEps = Math.round((r.n / r.raw.ms) * 1000);
  const stringifyEps = Math.round((r.n / r.rawStringify.ms) * 1000);
  const fig = {
    name,
    n: r.n,
    batch: r.batch,
    events_per_s: eps,
    raw_gzip_events_per_s: rawEps,
    ratio: +(eps / rawEps).toFixed(3),
    cpu_ratio: +(r.raw.cpuMs / r.store.cpuMs).toFixed(3),
    raw_stringify_gzip_events_per_s: stringifyEps,
    ratio_to_stringify: +(eps / stringifyEps).toFixed(3),
    cpu_ratio_to_stringify: +(r.rawStringify.cpuMs / r.store.cpuMs).toFixed(3),
    append_ms: Math.round(r.store.appendMs),
    seal_ms: Math.round(r.store.sealMs),
    canonical_mb: +(r.store.bytes / 2 ** 20).toFixed(1),
    stored_mb: +(r.store.storedBytes / 2 ** 20).toFixed(1),
    ...extra,
  };
  console.log(`BENCH ${JSON.stringify(fig)}`);
}

// Peak RSS of store-only runs under one heap cap for every size: the same bound holds at 10k and at 1M
// (uncapped, V8 collects lazily and RSS follows its heap sizing rather than what the store retains).
const rss = {};
for (const n of [SMALL, MID, N])
  rss[`peak_rss_mb_${n}`] = Math.round(runSize(n, 'appendTrusted', 'store-only', RSS_HEAP_CAP_MB).peakRssMb);
const large = runSize(N, 'appendTrusted');
line('trajectory.append', large, {
  ...rss,
  rss_heap_cap_mb: RSS_HEAP_CAP_MB,
  peak_rss_mb_uncapped: Math.round(large.peakRssMb),
});
line('trajectory.append.validated', runSize(VALIDATED, 'append'));

// OTLP decode + map, against protobufjs decoding the same bytes alone (median of 5 windows).
const SPANS = 2000;
const body = otlpRequestBytes(SPANS);
const windows = [];
for (let w = 0; w < 5; w++) {
  let t = performance.now();
  for (let i = 0; i < 10; i++) rawDecode(body);
  const raw = performance.now() - t;
  t = performance.now();
  for (let i = 0; i < 10; i++) spansToDrafts(decodeOtlpProtobuf(body));
  windows.push({ raw, ours: performance.now() - t });
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const oursMs = med(windows.map((w) => w.ours));
const rawMs = med(windows.map((w) => w.raw));
console.log(
  `BENCH ${JSON.stringify({
    name: 'trajectory.otlp.decode',
    spans: SPANS,
    bytes: body.length,
    spans_per_s: Math.round((SPANS * 10 * 1000) / oursMs),
    protobuf_decode_spans_per_s: Math.round((SPANS * 10 * 1000) / rawMs),
    ratio_to_protobuf_decode: +(rawMs / oursMs).toFixed(3),
  })}`,
);
