// One measurement, in its own process so that its peak RSS is its own:
//   node --expose-gc bench/stream.mjs <n> <backend> <pattern>
// A host writer (O(1) memory) appends n segments in chunks of 1024; each chunk is then verified by a
// streaming Verifier, and the very same inputs (head ‖ seg) are hashed by a bare chained-hash loop with the
// same backend. Only the three operations are timed; chunk preparation is not. Nothing grows with n except
// what the account walk must remember (one entry per distinct call id; pattern "unaccounted" has none).
import { performance } from 'node:perf_hooks';
import {
  blake3,
  blake3With,
  bytesToHex,
  genesisHead,
  hexToBytes,
  openWriter,
  segmentBytes,
  setHashBackend,
  Verifier,
} from '../dist/index.js';

const n = Number(process.argv[2]);
const backend = process.argv[3] ?? 'hash-wasm';
const pattern = process.argv[4] ?? 'accounted';
setHashBackend(backend);

const addr = (s) => bytesToHex(blake3With('noble', new TextEncoder().encode(s)));
const pool = Array.from({ length: 1024 }, (_, i) => addr(`attestation ${i}`));
const unitId = addr('bench unit');
const grantsId = addr('bench grants');
const manifest = addr('bench manifest');
const image = { root: addr('root'), memory: addr('memory') };
const transcript = { transcript: addr('transcript') };

// A realistic cycle: execute (dispatch a call) → park → resume → execute (resolve it) → …
function op(i) {
  const k = i >> 2;
  const snapshot = k & 1 ? transcript : image;
  switch (i & 3) {
    case 0:
      return pattern === 'accounted'
        ? { op: 'execute', attestation: pool[i & 1023], account: { dispatched: [`call-${k}`], resolved: [] } }
        : { op: 'execute', attestation: pool[i & 1023] };
    case 1:
      return { op: 'suspend', snapshot, manifest };
    case 2:
      return {
        op: 'resume',
        snapshot,
        manifest,
        idleUj: 1_000n + BigInt(k & 1023),
        idleProvenance: 'estimated',
      };
    default:
      return pattern === 'accounted'
        ? { op: 'execute', attestation: pool[i & 1023], account: { dispatched: [], resolved: [`call-${k}`] } }
        : { op: 'execute', attestation: pool[i & 1023] };
  }
}

const writer = openWriter({ unitId, grantsId });
const verifier = new Verifier({ unitId, grantsId });
const scratch = new Uint8Array(512);
let rawHead = hexToBytes(genesisHead(unitId, grantsId));
let tAppend = 0;
let tVerify = 0;
let tRaw = 0;
globalThis.gc?.();

const CHUNK = 1024;
for (let start = 0; start < n; start += CHUNK) {
  const end = Math.min(n, start + CHUNK);
  const ops = [];
  for (let i = start; i < end; i++) ops.push(op(i));

  let t = performance.now();
  const segments = ops.map((o) => writer.apply(o));
  tAppend += performance.now() - t;

  const inputs = segments.map((s) => segmentBytes(s));
  t = performance.now();
  for (const seg of inputs) {
    scratch.set(rawHead, 0);
    scratch.set(seg, 32);
    rawHead = blake3(scratch.subarray(0, 32 + seg.length));
  }
  tRaw += performance.now() - t;

  t = performance.now();
  for (const s of segments) verifier.push(s);
  tVerify += performance.now() - t;
}
const result = verifier.finish({ expectHead: writer.head });
if (!result.ok || bytesToHex(rawHead) !== writer.head) {
  console.error('bench record did not verify', result);
  process.exit(1);
}
const perS = (ms) => Math.round(n / (ms / 1000));
console.log(
  JSON.stringify({
    n,
    backend,
    pattern,
    append_per_s: perS(tAppend),
    verify_per_s: perS(tVerify),
    raw_hash_per_s: perS(tRaw),
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    account: result.account.verdict,
  }),
);
