// The attestation bundle's cost, in one process (node bench/attest.mjs [intervals]):
//   runrecord.attest.sign     executeInterval with a secret key (build the body, sign it, verify the binding
//                             and the signature on append) — intervals/s; baseline: the same appends with
//                             unsigned bodies (no Ed25519 at all), same process.
//   runrecord.attest.verify   verifyWire of the signed record (one Ed25519 verification per interval) —
//                             intervals/s; baseline: verifyWire of the very same record without its bundle.
// Each interval is one executed segment followed by a park and a resume, so the record has 3 segments per
// interval. Time is CPU time (user + system) of this process, like bench/stream.mjs.
import { generateSigningKey, openRecord, verifyWire } from '../dist/index.js';

const intervals = Number(process.argv[2] ?? 1000);
const key = generateSigningKey(new Uint8Array(32).fill(42));
const addr = (c) => c.repeat(64);
const now = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const receipt = (i) => ({
  startedMs: 1_764_600_000_000n + BigInt(i) * 10_000n,
  endedMs: 1_764_600_004_200n + BigInt(i) * 10_000n,
  activeUj: 8_400_000n + BigInt(i),
  provenance: 'estimated',
  meter: 'cgroup-cpu-model',
  journalRoot: addr('a'),
  outcome: 'yielded',
  exitCode: 0,
});
const park = { snapshot: { transcript: addr('b') }, manifest: addr('c') };

function record(signed) {
  const r = openRecord({ unitId: addr('1'), grantsId: addr('2') });
  const t = now();
  for (let i = 0; i < intervals; i++) {
    r.executeInterval(receipt(i), signed ? { secretKey: key.secretKey } : {});
    r.suspend(park);
    r.resume({ ...park, idleUj: 1000n, idleProvenance: 'estimated' });
  }
  return { r, ms: now() - t };
}

function timeVerify(wire, options) {
  const t = now();
  const v = verifyWire(wire, options);
  const ms = now() - t;
  if (!v.ok) throw new Error(`bench record did not verify: ${v.error}`);
  return ms;
}

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const perS = (ms) => Math.round(intervals / (ms / 1000));

record(false); // warm-up
const unsigned = record(false);
const signed = record(true);
const wire = JSON.parse(JSON.stringify(signed.r.toWire()));
const { attestations: _bundle, ...bare } = wire;
timeVerify(bare, {}); // warm-up
const bareMs = timeVerify(bare, {});
const bundledMs = timeVerify(wire, { trustKeys: [key.publicKey] });

for (const line of [
  {
    name: 'runrecord.attest.sign',
    intervals,
    intervals_per_s: perS(signed.ms),
    baseline_unsigned_per_s: perS(unsigned.ms),
    ratio_to_baseline: round(unsigned.ms / signed.ms),
  },
  {
    name: 'runrecord.attest.verify',
    intervals,
    intervals_per_s: perS(bundledMs),
    baseline_no_bundle_per_s: perS(bareMs),
    ratio_to_baseline: round(bareMs / bundledMs),
    trusted: true,
  },
])
  console.log(`BENCH ${JSON.stringify(line)}`);
