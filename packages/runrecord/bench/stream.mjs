// One measurement, in its own process so that its peak RSS is its own:
//   node --expose-gc bench/stream.mjs <n> <backend> <pattern> <api>
// A host writer (O(1) memory) appends n segments in chunks of 1024; each chunk is then verified by a
// streaming Verifier, and the very same inputs (head ‖ seg) are hashed by a bare chained-hash loop with the
// same backend and the same call (`blake3`), twice per chunk, interleaved with the subject (append, raw,
// verify, raw) so that machine noise hits both alike. Only those loops are timed; fixtures (ops, segment
// bytes) are built before the timed region. api "object": `writer.apply(op)` and `verifier.push(segment)`
// (hex addresses, frozen segment objects); api "bytes": `writer.appendBytes(seg)` and
// `verifier.pushBytes(seg, head)` (canonical segment bytes, 32-byte heads). Nothing grows with n except
// what the account walk must remember (one entry per distinct call id; pattern "unaccounted" has none).
// Time is this process's CPU time (user + system, all its threads, GC helpers included), not wall time: on
// a shared machine wall time also counts the moments the process waits for a core, which hit whichever loop
// happens to be running. Both sides are measured the same way.
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
const api = process.argv[5] ?? 'object';
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
const KIND = { execute: 'executed', suspend: 'suspended', resume: 'resumed', close: 'closed' };
const body = (o) => ({ ...o, kind: KIND[o.op] });

const writer = openWriter({ unitId, grantsId });
const verifier = new Verifier({ unitId, grantsId });
const scratch = new Uint8Array(512);
let rawHead = hexToBytes(genesisHead(unitId, grantsId));
let tAppend = 0;
let tVerify = 0;
let tRaw = 0;

const now = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function raw(inputs, from) {
  let head = from;
  const t = now();
  for (const seg of inputs) {
    scratch.set(head, 0);
    scratch.set(seg, 32);
    head = blake3(scratch.subarray(0, 32 + seg.length));
  }
  tRaw += now() - t;
  return head;
}

globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
const CHUNK = 1024;
for (let start = 0; start < n; start += CHUNK) {
  const end = Math.min(n, start + CHUNK);
  const ops = [];
  for (let i = start; i < end; i++) ops.push(op(i));
  let inputs;
  let t;
  if (api === 'object') {
    t = now();
    const segments = ops.map((o) => writer.apply(o));
    tAppend += now() - t;
    inputs = segments.map((s) => segmentBytes(s));
    raw(inputs, rawHead);
    t = now();
    for (const s of segments) verifier.push(s);
    tVerify += now() - t;
  } else {
    inputs = ops.map((o) => segmentBytes(body(o)));
    const heads = new Array(inputs.length);
    t = now();
    for (let i = 0; i < inputs.length; i++) heads[i] = writer.appendBytes(inputs[i]);
    tAppend += now() - t;
    raw(inputs, rawHead);
    t = now();
    for (let i = 0; i < inputs.length; i++) verifier.pushBytes(inputs[i], heads[i]);
    tVerify += now() - t;
  }
  rawHead = raw(inputs, rawHead);
}
tRaw /= 2; // two passes per chunk
const result = verifier.finish({ expectHead: writer.head });
if (!result.ok || bytesToHex(rawHead) !== writer.head) {
  console.error('bench record did not verify', result);
  process.exit(1);
}
globalThis.gc?.();
const mb = (b) => Math.round(b / 1048576);
const perS = (ms) => Math.round(n / (ms / 1000));
console.log(
  JSON.stringify({
    n,
    backend,
    pattern,
    api,
    append_per_s: perS(tAppend),
    verify_per_s: perS(tVerify),
    raw_hash_per_s: perS(tRaw),
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    rss_growth_mb: Math.round(process.resourceUsage().maxRSS / 1024) - mb(rssBefore),
    heap_after_gc_mb: Math.round((process.memoryUsage().heapUsed / 1048576) * 10) / 10,
    buffers_after_gc_mb: Math.round((process.memoryUsage().arrayBuffers / 1048576) * 10) / 10,
    account: result.account.verdict,
  }),
);
