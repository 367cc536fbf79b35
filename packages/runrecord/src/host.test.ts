import { describe, expect, it } from 'vitest';
import { addr, GRANTS, UNIT } from '../test/helpers.js';
import { genesisHead } from './chain.js';
import { isRunRecordError, type RunRecordError } from './errors.js';
import { type HostRecord, openRecord, reopenRecord } from './host-record.js';
import type { SnapshotInput } from './types.js';
import { verifyRecord } from './verify.js';

const MANIFEST = addr(0x99);
const IMG = { root: addr(0xa1), memory: addr(0xa2) };

function fresh(): HostRecord {
  return openRecord({ unitId: UNIT, grantsId: GRANTS });
}
function parked(snapshot: SnapshotInput = IMG): HostRecord {
  const r = fresh();
  r.execute({ attestation: addr(1) });
  r.suspend({ snapshot, manifest: MANIFEST });
  return r;
}
/** Asserts `act` is refused with `code` at the next index and leaves the record exactly as it was. */
function refused(r: HostRecord, code: string, act: (r: HostRecord) => unknown): RunRecordError {
  const before = {
    head: r.head,
    length: r.length,
    phase: r.phase,
    segments: [...r.segments],
    wire: r.toWire(),
  };
  let caught: unknown;
  try {
    act(r);
  } catch (e) {
    caught = e;
  }
  expect(isRunRecordError(caught), `expected ${code}, got ${String(caught)}`).toBe(true);
  const e = caught as RunRecordError;
  expect(e.code).toBe(code);
  expect(e.index).toBe(before.length);
  expect({
    head: r.head,
    length: r.length,
    phase: r.phase,
    segments: [...r.segments],
    wire: r.toWire(),
  }).toEqual(before);
  return e;
}

describe('host appends', () => {
  it('opens at the genesis head, active, empty', () => {
    const r = fresh();
    expect(r.head).toBe(genesisHead(UNIT, GRANTS));
    expect([r.length, r.phase]).toEqual([0, 'active']);
  });

  it('execute → suspend → resume → execute → close: heads advance, phases follow, the record verifies', () => {
    const r = fresh();
    const heads = [r.head];
    r.execute({ attestation: addr(1), account: { dispatched: ['c1'], resolved: [] } });
    heads.push(r.head);
    r.suspend({ snapshot: IMG, manifest: MANIFEST });
    expect(r.phase).toBe('parked');
    expect(r.parkedAt).toEqual({ snapshot: IMG, manifest: MANIFEST });
    heads.push(r.head);
    r.resume({ snapshot: { ...IMG }, manifest: MANIFEST, idleUj: 5n, idleProvenance: 'measured' });
    expect(r.phase).toBe('active');
    r.execute({ attestation: addr(2) });
    r.close('abandoned');
    heads.push(r.head);
    expect(new Set(heads).size).toBe(heads.length);
    expect([r.length, r.phase]).toEqual([5, 'closed']);
    const v = verifyRecord(r.toRecord());
    expect(v.ok && v.head).toBe(r.head);
  });

  it('returns frozen segments detached from the caller’s objects', () => {
    const r = fresh();
    const account = { dispatched: ['c1'], resolved: [] as string[] };
    const s = r.execute({ attestation: addr(1), account });
    account.dispatched.push('c2');
    expect(s.kind === 'executed' && s.account?.dispatched).toEqual(['c1']);
    expect(Object.isFrozen(s)).toBe(true);
    expect(verifyRecord(r.toRecord()).ok).toBe(true);
  });

  it('may close at genesis and while parked (abandonment leaves an auditable stub)', () => {
    const a = fresh();
    a.close('cancelled');
    expect(a.phase).toBe('closed');
    const b = parked();
    b.close('abandoned');
    expect(verifyRecord(b.toRecord()).ok).toBe(true);
  });
});

describe('host refusals (each leaves record and head unchanged)', () => {
  it('RecordClosed: anything after close, even a malformed op', () => {
    const r = fresh();
    r.execute({ attestation: addr(1) });
    r.close('completed');
    refused(r, 'RecordClosed', (x) => x.execute({ attestation: addr(2) }));
    refused(r, 'RecordClosed', (x) => x.close('failed'));
    refused(r, 'RecordClosed', (x) => x.execute({ attestation: 'not hex' }));
    refused(r, 'RecordClosed', (x) => x.suspend({ snapshot: {}, manifest: MANIFEST }));
  });

  it('MalformedSnapshot: neither form, both forms, transcript beside memory, memory alone', () => {
    const bad: SnapshotInput[] = [
      {},
      { memory: addr(3) },
      { root: addr(3), transcript: addr(4) },
      { transcript: addr(4), memory: addr(3) },
      { root: addr(3), memory: addr(5), transcript: addr(4) },
    ];
    for (const snapshot of bad) {
      refused(parkedless(), 'MalformedSnapshot', (x) => x.suspend({ snapshot, manifest: MANIFEST }));
      refused(parked(), 'MalformedSnapshot', (x) =>
        x.resume({ snapshot, manifest: MANIFEST, idleUj: 1n, idleProvenance: 'measured' }),
      );
    }
  });

  it('MalformedRecord: fields that cannot be encoded', () => {
    const r = parkedless();
    refused(r, 'MalformedRecord', (x) => x.execute({ attestation: addr(0xab).toUpperCase() }));
    refused(r, 'MalformedRecord', (x) => x.execute({ attestation: addr(1).slice(2) }));
    refused(r, 'MalformedRecord', (x) =>
      x.execute({ attestation: addr(1), account: { dispatched: ['\ud800'], resolved: [] } }),
    );
    refused(r, 'MalformedRecord', (x) => x.suspend({ snapshot: { root: 'zz' }, manifest: MANIFEST }));
    refused(r, 'MalformedRecord', (x) => x.suspend({ snapshot: IMG, manifest: '' }));
    refused(r, 'MalformedRecord', (x) => x.close('done' as never));
    const p = parked();
    for (const idleUj of [-1n, 2n ** 64n, 5 as unknown as bigint]) {
      refused(p, 'MalformedRecord', (x) =>
        x.resume({ snapshot: IMG, manifest: MANIFEST, idleUj, idleProvenance: 'measured' }),
      );
    }
    refused(p, 'MalformedRecord', (x) =>
      x.resume({ snapshot: IMG, manifest: MANIFEST, idleUj: 1n, idleProvenance: 'guessed' as never }),
    );
    // A field that cannot be read outranks a malformed form in the same segment.
    refused(p, 'MalformedRecord', (x) =>
      x.resume({
        snapshot: { root: IMG.root, transcript: 'x' },
        manifest: MANIFEST,
        idleUj: 1n,
        idleProvenance: 'measured',
      }),
    );
    expect(() => openRecord({ unitId: 'nope', grantsId: GRANTS })).toThrow(/MalformedRecord/);
  });

  it('PhaseViolation: suspend at genesis or after resume, execute while parked, resume while active', () => {
    refused(fresh(), 'PhaseViolation', (x) => x.suspend({ snapshot: IMG, manifest: MANIFEST }));
    refused(parked(), 'PhaseViolation', (x) => x.execute({ attestation: addr(2) }));
    refused(parked(), 'PhaseViolation', (x) => x.suspend({ snapshot: IMG, manifest: MANIFEST }));
    refused(parkedless(), 'PhaseViolation', (x) =>
      x.resume({ snapshot: IMG, manifest: MANIFEST, idleUj: 0n, idleProvenance: 'measured' }),
    );
    const r = parked();
    r.resume({ snapshot: IMG, manifest: MANIFEST, idleUj: 1n, idleProvenance: 'measured' });
    refused(r, 'PhaseViolation', (x) => x.suspend({ snapshot: IMG, manifest: MANIFEST }));
  });

  it('SnapshotMismatch: other root, missing memory, image vs transcript over the same address', () => {
    const resume =
      (snapshot: SnapshotInput, manifest = MANIFEST) =>
      (x: HostRecord) =>
        x.resume({ snapshot, manifest, idleUj: 0n, idleProvenance: 'measured' });
    refused(parked(), 'SnapshotMismatch', resume({ root: addr(0xa3), memory: IMG.memory }));
    refused(parked(), 'SnapshotMismatch', resume({ root: IMG.root }));
    refused(parked({ transcript: addr(7) }), 'SnapshotMismatch', resume({ root: addr(7) }));
    refused(parked({ root: addr(7) }), 'SnapshotMismatch', resume({ transcript: addr(7) }));
    // snapshot is checked before the manifest and before idle energy
    refused(parked(), 'SnapshotMismatch', resume({ root: addr(0xa3) }, addr(0x98)));
  });

  it('ManifestMismatch before ZeroIdleEnergy', () => {
    refused(parked(), 'ManifestMismatch', (x) =>
      x.resume({ snapshot: IMG, manifest: addr(0x98), idleUj: 0n, idleProvenance: 'measured' }),
    );
  });

  it('ZeroIdleEnergy: a park draws power, a transcript park too', () => {
    refused(parked(), 'ZeroIdleEnergy', (x) =>
      x.resume({ snapshot: IMG, manifest: MANIFEST, idleUj: 0n, idleProvenance: 'measured' }),
    );
    refused(parked({ transcript: addr(7) }), 'ZeroIdleEnergy', (x) =>
      x.resume({
        snapshot: { transcript: addr(7) },
        manifest: MANIFEST,
        idleUj: 0n,
        idleProvenance: 'estimated',
      }),
    );
  });

  it('check() reports the refusal without appending', () => {
    const r = parked();
    expect(r.check({ kind: 'executed', attestation: addr(2) })?.code).toBe('PhaseViolation');
    expect(r.check({ kind: 'closed', reason: 'completed' })).toBeNull();
    expect(r.length).toBe(2);
  });
});

describe('reopenRecord', () => {
  it('continues a verified record with the same head, phase and rules', () => {
    const r = parked({ transcript: addr(7) });
    const again = reopenRecord(r.toRecord(), { expectHead: r.head });
    expect([again.head, again.length, again.phase]).toEqual([r.head, 2, 'parked']);
    const e = (() => {
      try {
        again.resume({
          snapshot: { transcript: addr(8) },
          manifest: MANIFEST,
          idleUj: 1n,
          idleProvenance: 'measured',
        });
      } catch (x) {
        return x as RunRecordError;
      }
    })();
    expect(e?.code).toBe('SnapshotMismatch');
    again.resume({
      snapshot: { transcript: addr(7) },
      manifest: MANIFEST,
      idleUj: 1n,
      idleProvenance: 'measured',
    });
    r.resume({
      snapshot: { transcript: addr(7) },
      manifest: MANIFEST,
      idleUj: 1n,
      idleProvenance: 'measured',
    });
    expect(again.head).toBe(r.head);
  });

  it('refuses a record that does not verify, or another head than expected', () => {
    const rec = parked().toRecord();
    const tampered = { ...rec, segments: [rec.segments[0]!, { ...rec.segments[1]!, manifest: addr(0x98) }] };
    expect(() => reopenRecord(tampered as typeof rec)).toThrow(
      expect.objectContaining({ code: 'HeadMismatch', index: 1 }),
    );
    expect(() => reopenRecord(rec, { expectHead: addr(0) })).toThrow(
      expect.objectContaining({ code: 'HeadMismatch', index: undefined }),
    );
  });
});

function parkedless(): HostRecord {
  const r = fresh();
  r.execute({ attestation: addr(1) });
  return r;
}
