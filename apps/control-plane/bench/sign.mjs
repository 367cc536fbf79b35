// BENCH: the cost of signing one interval's attestation on the settle path — node:crypto (OpenSSL, what
// src/keys/signer.ts uses) against runrecord's pure-JS noble signAddress (baseline), and against building
// the attestation unsigned (the settle path's work per interval before signing). Same process, same inputs.
import { createPrivateKey, randomBytes, sign } from 'node:crypto';
import { blake3, buildAttestation, bytesToHex, signAddress, signatureMessage } from '@everdict/runrecord';

const N = Number(process.env.BENCH_N ?? 2000);
const secret = randomBytes(32);
const key = createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), secret]),
  format: 'der',
  type: 'pkcs8',
});
const addr = (i) => bytesToHex(blake3(new TextEncoder().encode(`interval ${i}`)));
const addrs = Array.from({ length: N }, (_, i) => addr(i));
const h = addrs[0];

function time(label, fn) {
  for (let i = 0; i < Math.min(200, N); i++) fn(i); // warm-up
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) fn(i);
  const d = process.cpuUsage(t0);
  return { label, usPerOp: (d.user + d.system) / N };
}

const build = time('build-attestation', (i) =>
  buildAttestation({
    unitId: h,
    grantsId: h,
    recordHead: addrs[i],
    startedMs: 1n,
    endedMs: 2n,
    activeUj: 5000n,
    provenance: 'estimated',
    meter: 'inline-wallclock-model',
    journalRoot: h,
    outcome: 'succeeded',
    exitCode: 0,
  }),
);
const noble = time('sign-noble', (i) => signAddress(addrs[i], secret));
const openssl = time('sign-node-crypto', (i) => sign(null, signatureMessage(addrs[i]), key));
for (const r of [build, noble, openssl])
  console.log(
    `BENCH ${r.label} us_per_op=${r.usPerOp.toFixed(1)} ratio_vs_noble=${(r.usPerOp / noble.usPerOp).toFixed(3)} n=${N}`,
  );
