import { describe, expect, it } from 'vitest';
import { addr, closed, exec, forge, GRANTS, image, res, susp, transcript, UNIT } from '../test/helpers.js';
import { hexToBytes } from './bytes.js';
import { genesisHead } from './chain.js';
import { segmentBytes } from './segment.js';
import type { RunRecord, Segment } from './types.js';
import { Verifier, verifyRecord, verifyWire } from './verify.js';
import { encodeWire } from './wire.js';

const GOOD = forge([
  exec(1, ['c1']),
  susp(image(2, 3)),
  res(image(2, 3), 700n),
  exec(4, [], ['c1']),
  closed(),
]);

function fails(record: RunRecord, error: string, index?: number, expectHead?: string) {
  const r = verifyRecord(record, expectHead === undefined ? {} : { expectHead });
  expect(r.ok ? 'ok' : { error: r.error, index: r.index }).toEqual({ error, index });
  // The wire path reads segment by segment and must blame identically.
  const w = verifyWire(
    JSON.parse(JSON.stringify(encodeWire(record))),
    expectHead === undefined ? {} : { expectHead },
  );
  expect(w.ok ? 'ok' : { error: w.error, index: w.index }).toEqual({ error, index });
  // So must the byte path, wherever every segment can be put into bytes at all.
  const b = viaBytes(record, expectHead);
  if (b) expect(b.ok ? 'ok' : { error: b.error, index: b.index }).toEqual({ error, index });
}

function viaBytes(record: RunRecord, expectHead?: string) {
  let parts: { seg: Uint8Array; head: Uint8Array }[];
  try {
    parts = record.segments.map((s) => ({ seg: segmentBytes(s), head: hexToBytes(s.head) }));
  } catch {
    return undefined;
  }
  const v = new Verifier(record);
  for (const p of parts) if (!v.pushBytes(p.seg, p.head)) break;
  return v.finish(expectHead === undefined ? { head: record.head } : { head: record.head, expectHead });
}
const withSegment = (r: RunRecord, i: number, patch: Partial<Record<string, unknown>>): RunRecord => ({
  ...r,
  segments: r.segments.map((s, j) => (j === i ? ({ ...s, ...patch } as Segment) : s)),
});

describe('verify from genesis', () => {
  it('a well-formed record verifies: head, length, phase, idle, account', () => {
    const r = verifyRecord(GOOD);
    expect(r).toEqual({
      ok: true,
      head: GOOD.head,
      length: 5,
      phase: 'closed',
      idleUj: 700n,
      account: { verdict: 'non_blocking' },
      cost: { activeUj: 0n, idleUj: 700n, totalUj: 700n, unresolved: 2 },
      signedBy: [],
    });
    expect(verifyRecord(forge([]))).toMatchObject({ ok: true, head: genesisHead(UNIT, GRANTS) });
    expect(verifyRecord(forge([exec(1), susp(transcript(2))]))).toMatchObject({ ok: true, phase: 'parked' });
  });

  it('rule 1: a modified field breaks its head (first bad index); so does a modified head', () => {
    fails(withSegment(GOOD, 1, { manifest: addr(0x98) }), 'HeadMismatch', 1);
    fails(withSegment(GOOD, 1, { snapshot: { root: addr(2) } }), 'HeadMismatch', 1);
    fails(withSegment(GOOD, 2, { idleUj: 701n }), 'HeadMismatch', 2);
    fails(withSegment(GOOD, 3, { head: addr(0) }), 'HeadMismatch', 3);
    fails(withSegment(GOOD, 0, { account: undefined }), 'HeadMismatch', 0);
    fails({ ...GOOD, unitId: addr(0x12) }, 'HeadMismatch', 0);
    fails({ ...GOOD, segments: GOOD.segments.slice(1) }, 'HeadMismatch', 0);
  });

  it("rule 1: the record's head field, then the expected head (no index)", () => {
    fails({ ...GOOD, head: GOOD.segments[3]!.head }, 'HeadMismatch');
    fails({ ...GOOD, segments: GOOD.segments.slice(0, 4) }, 'HeadMismatch');
    fails(GOOD, 'HeadMismatch', undefined, addr(0x44));
    expect(verifyRecord(GOOD, { expectHead: GOOD.head }).ok).toBe(true);
  });

  it('rule 2: phase violations, recomputed heads notwithstanding', () => {
    fails(forge([susp(image(2))]), 'PhaseViolation', 0);
    fails(forge([exec(1), susp(image(2)), exec(3)]), 'PhaseViolation', 2);
    fails(forge([exec(1), res(image(2))]), 'PhaseViolation', 1);
    fails(forge([exec(1), susp(image(2)), res(image(2)), susp(image(2))]), 'PhaseViolation', 3);
    fails(forge([exec(1), closed(), exec(2)]), 'RecordClosed', 2);
    fails(forge([closed(), closed()]), 'RecordClosed', 1);
  });

  it('rule 3: snapshot and manifest identity at every resume', () => {
    fails(forge([exec(1), susp(image(2, 3)), res(image(2))]), 'SnapshotMismatch', 2);
    fails(forge([exec(1), susp(image(2)), res(transcript(2))]), 'SnapshotMismatch', 2);
    fails(
      forge([exec(1), susp(transcript(2), addr(0x99)), res(transcript(2), 1n, addr(0x98))]),
      'ManifestMismatch',
      2,
    );
  });

  it('rule 4: a reference of neither/both forms edited into a wire record fails (MalformedSnapshot), not hashes', () => {
    const wire = JSON.parse(JSON.stringify(encodeWire(GOOD)));
    wire.segments[1].snapshot.transcript = addr(5);
    expect(verifyWire(wire)).toMatchObject({ ok: false, error: 'MalformedSnapshot', index: 1 });
    const obj = withSegment(GOOD, 2, { snapshot: {} });
    expect(verifyRecord(obj)).toMatchObject({ ok: false, error: 'MalformedSnapshot', index: 2 });
  });

  it('rule 5: no resumed records zero idle energy', () => {
    fails(forge([exec(1), susp(transcript(2)), res(transcript(2), 0n)]), 'ZeroIdleEnergy', 2);
  });

  it('order: RecordClosed before Malformed, Malformed before HeadMismatch, HeadMismatch before the rules', () => {
    const wire = JSON.parse(JSON.stringify(encodeWire(forge([exec(1), closed()]))));
    wire.segments.push({ kind: 'bogus' });
    expect(verifyWire(wire)).toMatchObject({ ok: false, error: 'RecordClosed', index: 2 });
    const w2 = JSON.parse(JSON.stringify(encodeWire(GOOD)));
    w2.segments[1].head = addr(0);
    w2.segments[3].kind = 'bogus';
    expect(verifyWire(w2)).toMatchObject({ ok: false, error: 'HeadMismatch', index: 1 });
    w2.segments[1].kind = 'bogus';
    expect(verifyWire(w2)).toMatchObject({ ok: false, error: 'MalformedRecord', index: 1 });
    // A forged phase violation whose head is also wrong is blamed on the head.
    fails(withSegment(forge([susp(image(2))]), 0, { head: addr(1) }), 'HeadMismatch', 0);
  });

  it('malformed envelopes are MalformedRecord with no index', () => {
    for (const bad of [
      null,
      7,
      [],
      { ...encodeWire(GOOD), format: 'x' },
      { ...encodeWire(GOOD), extra: 1 },
    ]) {
      const r = verifyWire(bad);
      expect(r).toMatchObject({ ok: false, error: 'MalformedRecord' });
      expect('index' in r).toBe(false);
    }
    expect(verifyRecord({ ...GOOD, unitId: 'x' })).toMatchObject({ ok: false, error: 'MalformedRecord' });
  });

  it('the streaming Verifier agrees with verifyRecord and stops at the first failure', () => {
    const v = new Verifier(GOOD);
    for (const s of GOOD.segments) expect(v.push(s)).toBe(true);
    expect(v.finish({ head: GOOD.head })).toEqual(verifyRecord(GOOD));
    const bad = new Verifier(GOOD);
    expect(bad.push(GOOD.segments[1]!)).toBe(false);
    expect(bad.push(GOOD.segments[0]!)).toBe(false);
    expect(bad.finish()).toMatchObject({ ok: false, error: 'HeadMismatch', index: 0 });
  });
});
