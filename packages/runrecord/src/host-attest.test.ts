// The host appends executed segments with their attestation bodies: rules 6–8 on append in the order of
// checks, the reuse of an address, the bundle in the wire form, executeInterval, and `build` with `body`.
import { describe, expect, it } from 'vitest';
import {
  attestationAt,
  bundledRecord,
  IDENTITY_SIG,
  KEY_1,
  KEY_2,
  receipt,
  wireOf,
} from '../test/attest-helpers.js';
import { addr, GRANTS, UNIT } from '../test/helpers.js';
import { attestationAddress } from './attestation.js';
import { encodeAttestationBody } from './bundle.js';
import { isRunRecordError } from './errors.js';
import { openWriter, type RecordWriter } from './host.js';
import { openRecord, reopenRecord } from './host-record.js';
import { buildRecord } from './ops.js';
import { segmentBytes } from './segment.js';
import { signAttestation } from './signature.js';
import { verifyWire } from './verify.js';
import { decodeWire } from './wire.js';

function refusal(r: RecordWriter, run: () => unknown) {
  const before = [r.head, r.length, r.phase];
  try {
    run();
  } catch (e) {
    if (!isRunRecordError(e)) throw e;
    expect([r.head, r.length, r.phase]).toEqual(before);
    return { code: e.code, index: e.index };
  }
  throw new Error('expected a refusal');
}

describe('appending an executed segment with its body', () => {
  it('puts the body in the bundle; the wire form verifies with cost and signer', () => {
    const { record, bodies } = bundledRecord();
    expect([...record.attestations.keys()]).toEqual([bodies[0].address, bodies[1].address]);
    const w = wireOf(record);
    expect(w.attestations[bodies[0].address]).toEqual(encodeAttestationBody(bodies[0].body));
    expect(verifyWire(w, { expectHead: record.head })).toMatchObject({
      ok: true,
      cost: { unresolved: 1 },
      signedBy: [KEY_1.publicKey],
    });
  });

  it('executeInterval binds the body here: this unit, this grant set, the head before the segment', () => {
    const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
    r.execute({ attestation: addr(1) });
    const headBefore = r.head;
    const a = r.executeInterval(receipt(1, { auditPrev: addr(0x0a) }), { secretKey: KEY_2.secretKey });
    expect(a.body).toMatchObject({
      unitId: UNIT,
      grantsId: GRANTS,
      recordHead: headBefore,
      auditPrev: addr(0x0a),
    });
    expect(a.address).toBe(attestationAddress(a.body));
    expect(a.segment).toMatchObject({ kind: 'executed', attestation: a.address, head: r.head });
    expect(a.body.signature?.key).toBe(KEY_2.publicKey);
    expect(Object.isFrozen(a.body)).toBe(true);
  });

  it('refuses a body that is not this segment’s, record’s or position’s: AttestationMismatch', () => {
    const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
    r.execute({ attestation: addr(1) });
    const good = signAttestation(attestationAt(r.head), KEY_1.secretKey);
    expect(refusal(r, () => r.execute({ attestation: addr(2), body: good.body }))).toEqual({
      code: 'AttestationMismatch',
      index: 1,
    });
    for (const over of [{ unitId: addr(0x55) }, { grantsId: addr(0x56) }, { recordHead: addr(0x57) }]) {
      const moved = signAttestation(attestationAt(r.head, 1, over), KEY_1.secretKey);
      expect(refusal(r, () => r.execute({ attestation: moved.address, body: moved.body })).code).toBe(
        'AttestationMismatch',
      );
    }
    r.execute({ attestation: good.address, body: good.body });
    expect(r.length).toBe(2);
  });

  it('refuses a signature that does not verify (a small-order key too): BadSignature', () => {
    const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
    const a = attestationAt(r.head);
    const address = attestationAddress(a);
    const forged = {
      ...a,
      signature: signAttestation(attestationAt(addr(9)), KEY_1.secretKey).body.signature,
    };
    expect(refusal(r, () => r.execute({ attestation: address, body: forged }))).toEqual({
      code: 'BadSignature',
      index: 0,
    });
    const identity = {
      ...a,
      signature: { alg: 'ed25519' as const, key: `01${'00'.repeat(31)}`, sig: IDENTITY_SIG },
    };
    expect(refusal(r, () => r.execute({ attestation: address, body: identity })).code).toBe('BadSignature');
  });

  it('checks in the spec’s order: RecordClosed → malformed → PhaseViolation → binding → signature', () => {
    const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
    const bad = { ...attestationAt(r.head), exitCode: 2 ** 31 };
    expect(refusal(r, () => r.execute({ attestation: addr(1), body: bad })).code).toBe('MalformedRecord');
    r.execute({ attestation: addr(1) });
    r.suspend({ snapshot: { root: addr(2) }, manifest: addr(3) });
    const elsewhere = {
      ...attestationAt(addr(7)),
      signature: { alg: 'ed25519' as const, key: KEY_1.publicKey, sig: '00'.repeat(64) },
    };
    expect(refusal(r, () => r.execute({ attestation: addr(4), body: elsewhere })).code).toBe(
      'PhaseViolation',
    );
    r.resume({ snapshot: { root: addr(2) }, manifest: addr(3), idleUj: 1n, idleProvenance: 'measured' });
    expect(
      refusal(r, () => r.execute({ attestation: attestationAddress(elsewhere), body: elsewhere })).code,
    ).toBe('AttestationMismatch');
    r.close('completed');
    expect(refusal(r, () => r.execute({ attestation: addr(1), body: bad })).code).toBe('RecordClosed');
  });

  it('refuses an address whose bundled body binds it to an earlier segment (object and byte API)', () => {
    const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
    const first = r.executeInterval(receipt(1), { secretKey: KEY_1.secretKey });
    expect(refusal(r, () => r.execute({ attestation: first.address })).code).toBe('AttestationMismatch');
    const seg = segmentBytes({ kind: 'executed', attestation: first.address });
    expect(refusal(r, () => r.appendBytes(seg))).toEqual({ code: 'AttestationMismatch', index: 1 });
    r.execute({ attestation: addr(8) }); // an unbundled address may repeat
    r.appendBytes(segmentBytes({ kind: 'executed', attestation: addr(8) }));
    expect(verifyWire(wireOf(r))).toMatchObject({ ok: true, cost: { unresolved: 2 } });
  });

  it('reopening a record keeps its bundle and its bindings', () => {
    const { record } = bundledRecord();
    const again = reopenRecord(decodeWire(wireOf(record)));
    expect(wireOf(again)).toEqual(wireOf(record));
    const tampered = wireOf(record);
    const [first] = Object.keys(tampered.attestations);
    tampered.attestations[first!].meter = 'rapl';
    expect(() => reopenRecord(decodeWire(tampered))).toThrow(
      expect.objectContaining({ code: 'AttestationMismatch', index: 0 }),
    );
    expect(() => reopenRecord(decodeWire(wireOf(record)), { trustKeys: [KEY_2.publicKey] })).toThrow(
      expect.objectContaining({ code: 'UntrustedAttestation', index: 0 }),
    );
  });

  it('the O(1) writer checks a body’s binding and signature too, and returns it to keep', () => {
    const w = openWriter({ unitId: UNIT, grantsId: GRANTS });
    const a = w.executeInterval(receipt(1), { secretKey: KEY_1.secretKey });
    expect(a.body.recordHead).not.toBe(w.head);
    const stale = signAttestation(attestationAt(a.body.recordHead), KEY_1.secretKey);
    expect(refusal(w, () => w.execute({ attestation: stale.address, body: stale.body })).code).toBe(
      'AttestationMismatch',
    );
  });
});

describe('build with body', () => {
  const doc = (ops: unknown[]) => ({ unit_id: UNIT, grants_id: GRANTS, ops });

  it('bundles each body; no attestations key when no op carried one', () => {
    const body = signAttestation(attestationAt(genesisOf()), KEY_1.secretKey);
    const r = buildRecord(
      doc([{ op: 'execute', attestation: body.address, body: encodeAttestationBody(body.body) }]),
    );
    expect(r.ok && r.record.toWire().attestations).toEqual({
      [body.address]: encodeAttestationBody(body.body),
    });
    const bare = buildRecord(doc([{ op: 'execute', attestation: addr(1) }]));
    expect(bare.ok && 'attestations' in bare.record.toWire()).toBe(false);
  });

  it('refuses with the record as it stood: a malformed body, a mismatch, a bad signature, a reuse', () => {
    const body = signAttestation(attestationAt(genesisOf()), KEY_1.secretKey);
    const wire = encodeAttestationBody(body.body);
    const cases: [unknown[], string, number][] = [
      [[{ op: 'execute', attestation: body.address, body: { ...wire, extra: 1 } }], 'MalformedRecord', 0],
      [[{ op: 'execute', attestation: body.address, body: null }], 'MalformedRecord', 0],
      [[{ op: 'execute', attestation: addr(1), body: wire }], 'AttestationMismatch', 0],
      [
        [
          {
            op: 'execute',
            attestation: body.address,
            body: { ...wire, signature: { ...wire.signature, key: KEY_2.publicKey } },
          },
        ],
        'BadSignature',
        0,
      ],
      [
        [
          { op: 'execute', attestation: body.address, body: wire },
          { op: 'execute', attestation: body.address },
        ],
        'AttestationMismatch',
        1,
      ],
    ];
    for (const [ops, error, index] of cases) {
      const r = buildRecord(doc(ops));
      expect(r).toMatchObject({ ok: false, error, index, length: index });
    }
  });
});

describe('order of checks on append', () => {
  it('a body that cannot be encoded is read after the segment’s phase (rule 6 follows PhaseViolation)', () => {
    const bad = { ...attestationAt(genesisOf()), exitCode: 1.5 };
    for (const writer of [
      openRecord({ unitId: UNIT, grantsId: GRANTS }),
      openWriter({ unitId: UNIT, grantsId: GRANTS }),
    ]) {
      expect(refusal(writer, () => writer.execute({ attestation: addr(1), body: bad }))).toEqual({
        code: 'MalformedRecord',
        index: 0,
      });
      writer.execute({ attestation: addr(1) });
      writer.suspend({ snapshot: { transcript: addr(2) }, manifest: addr(3) });
      expect(refusal(writer, () => writer.execute({ attestation: addr(4), body: bad }))).toEqual({
        code: 'PhaseViolation',
        index: 2,
      });
    }
  });
});

function genesisOf(): string {
  return openRecord({ unitId: UNIT, grantsId: GRANTS }).head;
}
