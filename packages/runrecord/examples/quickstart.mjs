import { randomBytes } from 'node:crypto';
import {
  blake3,
  bytesToHex,
  costToJson,
  generateSigningKey,
  openRecord,
  RunRecordError,
  verifyWire,
} from '@everdict/runrecord';

const addr = (text) => bytesToHex(blake3(new TextEncoder().encode(text))); // any content address
const unitId = addr('unit: agent/code-reviewer@3.1.0');
const grantsId = addr('grants: repo:read, net:none');
const steward = generateSigningKey(randomBytes(32)); // keep .secretKey secret, publish .publicKey

// The host: seal an interval into a signed attestation bound to this record here, and append it with its
// body; park on a transcript; resume with the idle energy the park drew; close.
const record = openRecord({ unitId, grantsId });
const interval = record.executeInterval(
  {
    ...{ startedMs: 1764547200000n, endedMs: 1764547295000n, outcome: 'yielded', exitCode: 0 },
    ...{ activeUj: 48_200_000n, provenance: 'measured', meter: 'rapl', journalRoot: addr('journal 0') },
  },
  { secretKey: steward.secretKey, account: { dispatched: ['review#1'], resolved: [] } },
);
const park = { snapshot: { transcript: addr('transcript 1') }, manifest: addr('manifest: node20') };
record.suspend(park);
try {
  record.resume({ ...park, idleUj: 0n, idleProvenance: 'estimated' }); // a park is never free
} catch (e) {
  if (!(e instanceof RunRecordError)) throw e;
  console.log('refused:', e.code, 'at', e.index, '— length still', record.length);
}
record.resume({ ...park, idleUj: 86_400n, idleProvenance: 'estimated' });
record.close('completed');

// Anyone: verify the wire form (its bundle travels in it) from genesis, trusting the steward's key.
const wire = JSON.parse(JSON.stringify(record.toWire()));
const result = verifyWire(wire, { expectHead: record.head, trustKeys: [steward.publicKey] });
console.log('verified:', result.ok, result.phase, 'account', result.account.verdict);
const bySteward = result.signedBy[0] === steward.publicKey;
console.log('cost µJ:', JSON.stringify(costToJson(result.cost)), '— signed by the steward:', bySteward);

// Edit the bundled energy figure: the body no longer hashes to the address its segment names.
wire.attestations[interval.address].active_uj = '1';
console.log('edited:', verifyWire(wire).error);
