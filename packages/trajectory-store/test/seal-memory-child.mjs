// Appends and seals a trajectory larger than this process's heap cap, sampling the heap while it seals.
//   node --max-old-space-size=<MB> test/seal-memory-child.mjs <dir> <events>
// Prints one JSON line: the seal's digest and sizes, and the heap high-water marks it saw.

import { sampleEvents } from '../dist/fixtures.js';
import { localBackend, TrajectoryStore } from '../dist/index.js';

const [dir, count] = [process.argv[2], Number(process.argv[3])];
const store = new TrajectoryStore({ backend: localBackend({ root: dir }) });
let peakAppend = 0;
for (let seq = 0; seq < count; seq += 1000) {
  await store.appendTrusted('t', 'big', sampleEvents('big', seq, Math.min(1000, count - seq)));
  peakAppend = Math.max(peakAppend, process.memoryUsage().heapUsed);
}
let peakSeal = 0;
const sampler = setInterval(() => {
  peakSeal = Math.max(peakSeal, process.memoryUsage().heapUsed);
}, 5);
const { seal } = await store.seal('t', 'big');
clearInterval(sampler);
peakSeal = Math.max(peakSeal, process.memoryUsage().heapUsed);
const verification = await store.verify('t', 'big', seal.digest);
await store.close();
console.log(
  JSON.stringify({
    digest: seal.digest,
    eventCount: seal.eventCount,
    bytes: seal.bytes,
    ok: verification.ok,
    peakAppendMb: peakAppend / 2 ** 20,
    peakSealMb: peakSeal / 2 ** 20,
  }),
);
