// A/B of this build against another build of the package (e.g. `main`'s), in ONE process:
//   node bench/ab.mjs <other>/dist/index.js [n=1000000]
// Both builds are imported side by side; the same execute → park → resume → execute cycle is appended and
// verified through the object API and the byte API in interleaved 4096-segment chunks (which build goes
// first alternates), timed in CPU time. One BENCH line per path, `ratio_to_baseline` = this ÷ other.
// To get a baseline of main: `git archive main packages/runrecord | tar -x -C /tmp/base`, link the
// workspace's node_modules into /tmp/base (and /tmp/base/packages/runrecord), run tsup there.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [otherPath, nArg] = process.argv.slice(2);
if (!otherPath) {
  console.error('usage: node bench/ab.mjs <other>/dist/index.js [n]');
  process.exit(2);
}
const libs = {
  other: await import(pathToFileURL(resolve(otherPath)).href),
  this: await import('../dist/index.js'),
};
const n = Number(nArg ?? 1_000_000);
const now = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const { blake3With, bytesToHex, segmentBytes } = libs.this;
const addr = (s) => bytesToHex(blake3With('noble', new TextEncoder().encode(s)));
const pool = Array.from({ length: 1024 }, (_, i) => addr(`a${i}`));
const image = { root: addr('r') };
const manifest = addr('m');
function op(i) {
  const k = i >> 2;
  const attestation = pool[i & 1023];
  switch (i & 3) {
    case 0:
      return { op: 'execute', attestation, account: { dispatched: [`c-${k}`], resolved: [] } };
    case 1:
      return { op: 'suspend', snapshot: image, manifest };
    case 2:
      return { op: 'resume', snapshot: image, manifest, idleUj: 1000n, idleProvenance: 'estimated' };
    default:
      return { op: 'execute', attestation, account: { dispatched: [], resolved: [`c-${k}`] } };
  }
}
const KIND = { execute: 'executed', suspend: 'suspended', resume: 'resumed' };
const id = { unitId: addr('u'), grantsId: addr('g') };
const paths = ['append', 'verify', 'append.bytes', 'verify.bytes'];
const state = {};
for (const [name, lib] of Object.entries(libs)) {
  state[name] = {
    writer: lib.openWriter(id),
    byteWriter: lib.openWriter(id),
    verifier: new lib.Verifier(id),
    byteVerifier: new lib.Verifier(id),
    ms: Object.fromEntries(paths.map((p) => [p, 0])),
  };
}
const CHUNK = 4096;
for (let start = 0; start < n; start += CHUNK) {
  const ops = [];
  for (let i = start; i < Math.min(n, start + CHUNK); i++) ops.push(op(i));
  const segs = ops.map((o) => segmentBytes({ ...o, kind: KIND[o.op] }));
  for (const name of (start / CHUNK) % 2 ? ['other', 'this'] : ['this', 'other']) {
    const s = state[name];
    let t = now();
    const appended = ops.map((o) => s.writer.apply(o));
    s.ms.append += now() - t;
    t = now();
    for (const seg of appended) s.verifier.push(seg);
    s.ms.verify += now() - t;
    t = now();
    const heads = segs.map((b) => s.byteWriter.appendBytes(b));
    s.ms['append.bytes'] += now() - t;
    t = now();
    for (let i = 0; i < segs.length; i++) s.byteVerifier.pushBytes(segs[i], heads[i]);
    s.ms['verify.bytes'] += now() - t;
  }
}
for (const s of Object.values(state)) {
  if (!s.verifier.finish().ok || !s.byteVerifier.finish().ok) throw new Error('bench record did not verify');
}
if (state.this.writer.head !== state.other.writer.head) throw new Error('the two builds disagree on heads');
const perS = (ms) => Math.round(n / (ms / 1000));
for (const p of paths) {
  const line = {
    name: `runrecord.ab.${p}`,
    n,
    segments_per_s: perS(state.this.ms[p]),
    baseline_per_s: perS(state.other.ms[p]),
    ratio_to_baseline: Math.round((state.other.ms[p] / state.this.ms[p]) * 1000) / 1000,
  };
  console.log(`BENCH ${JSON.stringify(line)}`);
}
