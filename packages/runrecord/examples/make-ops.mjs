// Regenerates examples/ops.json deterministically (run from packages/runrecord after a build):
//   node examples/make-ops.mjs > examples/ops.json
//   node dist/cli.js build --pretty < examples/ops.json > examples/record.json
// Each execute op carries its attestation body, signed by the example steward key (its 32 secret bytes are
// H("example steward key") — public, so never a real key); `record.json` therefore verifies with
// `--trust-key` of that key's public half, printed on stderr.
import {
  blake3,
  bytesToHex,
  encodeAttestationBody,
  generateSigningKey,
  openWriter,
  signAttestation,
} from '@everdict/runrecord';

const h = (text) => bytesToHex(blake3(new TextEncoder().encode(text)));
const unit_id = h('unit: agent/code-reviewer@3.1.0');
const grants_id = h('grants: repo:read, net:none, fs:/work');
const writer = openWriter({ unitId: unit_id, grantsId: grants_id });
const hour = 3_600_000n;
const t0 = 1_764_547_200_000n;

const steward = generateSigningKey(blake3(new TextEncoder().encode('example steward key')));
let body;
const attest = (n, activeUj, outcome) => {
  const signed = signAttestation(
    {
      ...{ unitId: unit_id, grantsId: grants_id, recordHead: writer.head, journalRoot: h(`journal ${n}`) },
      ...{ startedMs: t0 + BigInt(n) * hour, endedMs: t0 + BigInt(n) * hour + 95_000n, exitCode: 0, outcome },
      ...{ activeUj, provenance: 'measured', meter: 'rapl' },
    },
    steward.secretKey,
  );
  body = signed.body;
  return signed.address;
};
const image = { root: h('fs root after interval 0'), memory: h('memory image after interval 0') };
const transcript = { transcript: h('transcript after interval 1') };
const manifest = h('manifest: node20 + pnpm10');

const ops = [];
const apply = (op, json) => {
  writer.apply(op);
  ops.push(json);
};
let a = attest(0, 48_200_000n, 'yielded');
const acc0 = { dispatched: ['build#1'], resolved: [] };
apply(
  { op: 'execute', attestation: a, account: acc0, body },
  { op: 'execute', attestation: a, account: acc0, body: encodeAttestationBody(body) },
);
apply({ op: 'suspend', snapshot: image, manifest }, { op: 'suspend', snapshot: image, manifest });
const r0 = { snapshot: image, manifest, idleUj: 1_250_000n, idleProvenance: 'measured' };
apply(
  { op: 'resume', ...r0 },
  { op: 'resume', snapshot: image, manifest, idle_uj: '1250000', idle_provenance: 'measured' },
);
a = attest(1, 12_900_000n, 'yielded');
const acc1 = { dispatched: ['review#2'], resolved: ['build#1'] };
apply(
  { op: 'execute', attestation: a, account: acc1, body },
  { op: 'execute', attestation: a, account: acc1, body: encodeAttestationBody(body) },
);
apply({ op: 'suspend', snapshot: transcript, manifest }, { op: 'suspend', snapshot: transcript, manifest });
const r1 = { snapshot: transcript, manifest, idleUj: 86_400n, idleProvenance: 'estimated' };
apply(
  { op: 'resume', ...r1 },
  { op: 'resume', snapshot: transcript, manifest, idle_uj: '86400', idle_provenance: 'estimated' },
);
a = attest(2, 9_700_000n, 'succeeded');
const acc2 = { dispatched: [], resolved: ['review#2'] };
apply(
  { op: 'execute', attestation: a, account: acc2, body },
  { op: 'execute', attestation: a, account: acc2, body: encodeAttestationBody(body) },
);
apply({ op: 'close', reason: 'completed' }, { op: 'close', reason: 'completed' });

console.log(JSON.stringify({ unit_id, grants_id, ops }, null, 2));
console.error(`example steward public key: ${steward.publicKey}`);
