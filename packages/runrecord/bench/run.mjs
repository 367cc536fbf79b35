// `pnpm bench`: append and verify throughput for 10k, 100k and 1M segments, as segments/s and as a ratio to
// hashing the same bytes (head ‖ seg) with the same BLAKE3 backend in the same process; peak RSS of verifying
// from a stream. Each (backend, n) runs in a child process (bench/stream.mjs) so that peak RSS is its own.
// Prints one `BENCH {json}` line per figure; the chosen backend's lines are named runrecord.append/verify,
// the alternative backend's runrecord.append.noble / runrecord.verify.noble.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./stream.mjs', import.meta.url));
const measure = (n, backend, pattern = 'accounted') =>
  JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', child, String(n), backend, pattern], { encoding: 'utf8' }),
  );

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const lines = [];
for (const backend of ['hash-wasm', 'noble']) {
  for (const n of [10_000, 100_000, 1_000_000]) {
    const m = measure(n, backend);
    const suffix = backend === 'hash-wasm' ? '' : '.noble';
    for (const what of ['append', 'verify']) {
      const line = {
        name: `runrecord.${what}${suffix}`,
        n,
        segments_per_s: m[`${what}_per_s`],
        ratio_to_raw_hash: round(m[`${what}_per_s`] / m.raw_hash_per_s),
        peak_rss_mb: m.peak_rss_mb,
        raw_hash_per_s: m.raw_hash_per_s,
        backend,
      };
      lines.push(line);
      console.log(`BENCH ${JSON.stringify(line)}`);
    }
  }
}
// Floor of the streaming verifier's memory: the same 1M segments without accounts (no call ids to remember).
const floor = measure(1_000_000, 'hash-wasm', 'unaccounted');
console.log(
  `BENCH ${JSON.stringify({ name: 'runrecord.verify.unaccounted', n: floor.n, segments_per_s: floor.verify_per_s, ratio_to_raw_hash: round(floor.verify_per_s / floor.raw_hash_per_s), peak_rss_mb: floor.peak_rss_mb, raw_hash_per_s: floor.raw_hash_per_s, backend: 'hash-wasm' })}`,
);
