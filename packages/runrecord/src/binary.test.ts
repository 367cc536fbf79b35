import { describe, expect, it } from 'vitest';
import { addr, closed, exec, forge, GRANTS, image, res, susp, transcript, UNIT } from '../test/helpers.js';
import { accountVerdict } from './accounts.js';
import { bytesToHex, hexToBytes, U64_MAX } from './bytes.js';
import { isRunRecordError } from './errors.js';
import { openWriter } from './host.js';
import { openRecord } from './host-record.js';
import { segmentBytes } from './segment.js';
import type { SegmentBody } from './types.js';
import { Verifier, verifyRecord } from './verify.js';

const BODIES: SegmentBody[] = [
  exec(1, ['c1', 'é-2']),
  susp(image(2, 3)),
  res(image(2, 3), 700n),
  exec(4, [], ['c1']),
  susp(transcript(5)),
  res(transcript(5), U64_MAX),
  exec(6),
  susp(image(7)),
  res(image(7), U64_MAX),
  closed('abandoned'),
];
const RECORD = forge(BODIES);

function refusal(f: () => unknown): { code: string; index: number | undefined } {
  try {
    f();
  } catch (e) {
    if (isRunRecordError(e)) return { code: e.code, index: e.index };
    throw e;
  }
  throw new Error('not refused');
}

describe('byte-level entry points', () => {
  it('appendBytes and pushBytes agree with the object API, head for head', () => {
    const host = openRecord({ unitId: UNIT, grantsId: GRANTS });
    const v = new Verifier({ unitId: UNIT, grantsId: GRANTS });
    for (const [i, s] of RECORD.segments.entries()) {
      const seg = segmentBytes(s);
      expect(bytesToHex(host.appendBytes(seg))).toBe(s.head);
      expect(host.head).toBe(s.head);
      expect(v.pushBytes(seg, hexToBytes(s.head))).toBe(true);
      expect(v.length).toBe(i + 1);
    }
    expect(host.toRecord()).toEqual(RECORD);
    expect(v.finish({ expectHead: RECORD.head })).toEqual(verifyRecord(RECORD));
    const r = verifyRecord(RECORD);
    expect(r.ok && r.idleUj).toBe(700n + 2n * U64_MAX);
  });

  it('object and byte pushes can be mixed on one verifier', () => {
    const v = new Verifier(RECORD);
    RECORD.segments.forEach((s, i) => {
      expect(i % 2 ? v.push(s) : v.pushBytes(segmentBytes(s), hexToBytes(s.head))).toBe(true);
    });
    expect(v.finish({ head: RECORD.head })).toEqual(verifyRecord(RECORD));
  });

  it('refuses bytes that are not one well-formed segment, leaving the record as it was', () => {
    const w = openWriter({ unitId: UNIT, grantsId: GRANTS });
    w.appendBytes(segmentBytes(exec(1)));
    const head = w.head;
    const good = segmentBytes(res(image(2), 5n));
    const bad = [
      new Uint8Array(0),
      Uint8Array.of(0x05),
      segmentBytes(exec(1)).subarray(0, 20),
      Uint8Array.of(...segmentBytes(exec(1)), 0x00),
      Uint8Array.of(...segmentBytes(exec(1)), 0xac, 0, 0, 0, 1, 0, 0, 0, 9, 0x61),
      Uint8Array.of(...segmentBytes(exec(1)), 0xac, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0, 0, 0, 0),
      Uint8Array.of(0x02, 0x03, ...good.subarray(2, 67)),
      Uint8Array.of(...good.subarray(0, good.length - 1), 0x03),
      Uint8Array.of(0x04, 0x09),
    ];
    for (const b of bad) {
      expect(refusal(() => w.appendBytes(b))).toEqual({ code: 'MalformedRecord', index: 1 });
      const v = new Verifier({ unitId: UNIT, grantsId: GRANTS });
      expect(v.pushBytes(b, new Uint8Array(32))).toBe(false);
      expect(v.error?.code).toBe('MalformedRecord');
    }
    expect(w.head).toBe(head);
    expect(w.length).toBe(1);
  });

  it('applies the rules in the spec order', () => {
    const w = openWriter({ unitId: UNIT, grantsId: GRANTS });
    const b = (x: SegmentBody) => segmentBytes(x);
    expect(refusal(() => w.appendBytes(b(res(image(2)))))).toEqual({ code: 'PhaseViolation', index: 0 });
    w.appendBytes(b(exec(1)));
    w.appendBytes(b(susp(image(2, 3))));
    expect(w.parkedAt).toEqual({ snapshot: image(2, 3), manifest: addr(0x99) });
    expect(refusal(() => w.appendBytes(b(res(image(2)))))).toEqual({ code: 'SnapshotMismatch', index: 2 });
    expect(refusal(() => w.appendBytes(b(res(image(2, 3), 1n, 'ab'.repeat(32)))))).toEqual({
      code: 'ManifestMismatch',
      index: 2,
    });
    expect(refusal(() => w.appendBytes(b(res(image(2, 3), 0n))))).toEqual({
      code: 'ZeroIdleEnergy',
      index: 2,
    });
    w.appendBytes(b(closed()));
    expect(refusal(() => w.appendBytes(new Uint8Array(0)))).toEqual({ code: 'RecordClosed', index: 3 });
  });

  it('blames a head that does not recompute, and a head that is not 32 bytes', () => {
    const seg = segmentBytes(RECORD.segments[0]!);
    const v = new Verifier(RECORD);
    const wrong = hexToBytes(RECORD.segments[0]!.head);
    wrong[31] = wrong[31]! ^ 1;
    expect(v.pushBytes(seg, wrong)).toBe(false);
    expect(v.finish()).toMatchObject({ ok: false, error: 'HeadMismatch', index: 0 });
    const u = new Verifier(RECORD);
    expect(u.pushBytes(seg, new Uint8Array(31))).toBe(false);
    expect(u.finish()).toMatchObject({ ok: false, error: 'MalformedRecord', index: 0 });
  });

  it('walks accounts from bytes exactly as from objects', () => {
    const cases: SegmentBody[][] = [
      [exec(1, ['a']), exec(2, ['a'])],
      [exec(1, ['a']), exec(2, [], ['b'])],
      [exec(1, ['a']), exec(2, [], ['a']), exec(3, [], ['a'])],
      [exec(1, ['a', 'b'], ['a'])],
      [exec(1, ['é']), exec(2, [], ['é'])],
      [exec(1, ['a']), exec(2)],
    ];
    for (const bodies of cases) {
      const r = forge(bodies);
      const v = new Verifier(r);
      for (const s of r.segments) v.pushBytes(segmentBytes(s), hexToBytes(s.head));
      const got = v.finish();
      expect(got.ok && got.account).toEqual(accountVerdict(bodies));
    }
  });
});
