import {
  blake3,
  bytesToHex,
  decodeWire,
  MemoryAttestationStore,
  openRecord,
  RunRecordError,
  runCost,
  verifyWire,
} from '@everdict/runrecord';

const addr = (text) => bytesToHex(blake3(new TextEncoder().encode(text))); // any content address
const unitId = addr('unit: agent/code-reviewer@3.1.0');
const grantsId = addr('grants: repo:read, net:none');
const store = new MemoryAttestationStore();

// The host: execute, park on a transcript, resume with the idle energy the park drew, close.
const record = openRecord({ unitId, grantsId });
const attestation = store.put({
  ...{ unitId, grantsId, recordHead: record.head, journalRoot: addr('journal 0') },
  ...{ startedMs: 1764547200000n, endedMs: 1764547295000n, exitCode: 0, outcome: 'yielded' },
  ...{ activeUj: 48_200_000n, provenance: 'measured', meter: 'rapl' },
});
record.execute({ attestation, account: { dispatched: ['review#1'], resolved: [] } });
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

// Anyone: verify the wire form from genesis, against the head the host reported.
const wire = JSON.parse(JSON.stringify(record.toWire()));
const result = verifyWire(wire, { expectHead: record.head });
console.log(
  'verified:',
  result.ok,
  result.phase,
  'idle µJ',
  result.idleUj,
  'account',
  result.account.verdict,
);
const cost = await runCost(decodeWire(wire), store);
console.log('total cost µJ:', cost.complete ? cost.totalUj : 'incomplete');
