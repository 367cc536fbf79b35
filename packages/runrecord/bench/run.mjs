// `pnpm bench`: append and verify throughput for 10k, 100k and 1M segments, as segments/s and as a ratio to
// hashing the same bytes (head ‖ seg) with the same BLAKE3 backend and call in the same process; peak RSS,
// RSS growth and heap after a forced GC of verifying from a stream. Each measurement runs in a child
// process (bench/stream.mjs) so that its memory figures are its own. Prints one `BENCH {json}` line each:
//   runrecord.append / runrecord.verify               object API (hex addresses, Segment objects), hash-wasm
//   runrecord.append.bytes / runrecord.verify.bytes   byte API (canonical seg bytes, 32-byte heads), hash-wasm
//   runrecord.append.noble / runrecord.verify.noble   object API on the pure-JS backend (10k, 100k)
//   runrecord.verify.unaccounted                      the memory floor: no call ids to remember (10k, 1M)
//   runrecord.attest.sign / runrecord.attest.verify   signed attestation bundles (bench/attest.mjs)
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./stream.mjs', import.meta.url));
const measure = (n, backend, pattern, api) =>
  JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', child, String(n), backend, pattern, api], {
      encoding: 'utf8',
    }),
  );

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
function report(name, m, what) {
  const line = {
    name,
    n: m.n,
    segments_per_s: m[`${what}_per_s`],
    ratio_to_raw_hash: round(m[`${what}_per_s`] / m.raw_hash_per_s),
    peak_rss_mb: m.peak_rss_mb,
    rss_growth_mb: m.rss_growth_mb,
    heap_after_gc_mb: m.heap_after_gc_mb,
    buffers_after_gc_mb: m.buffers_after_gc_mb,
    raw_hash_per_s: m.raw_hash_per_s,
    backend: m.backend,
    api: m.api,
  };
  console.log(`BENCH ${JSON.stringify(line)}`);
}

const M = [10_000, 100_000, 1_000_000];
const runs = [
  ...M.map((n) => ['', n, 'hash-wasm', 'accounted', 'object']),
  ...M.map((n) => ['.bytes', n, 'hash-wasm', 'accounted', 'bytes']),
  ...[10_000, 100_000].map((n) => ['.noble', n, 'noble', 'accounted', 'object']),
];
for (const [suffix, n, backend, pattern, api] of runs) {
  const m = measure(n, backend, pattern, api);
  for (const what of ['append', 'verify']) report(`runrecord.${what}${suffix}`, m, what);
}
for (const n of [10_000, 1_000_000]) {
  report('runrecord.verify.unaccounted', measure(n, 'hash-wasm', 'unaccounted', 'object'), 'verify');
}
process.stdout.write(
  execFileSync(process.execPath, [fileURLToPath(new URL('./attest.mjs', import.meta.url)), '1000'], {
    encoding: 'utf8',
  }),
);
