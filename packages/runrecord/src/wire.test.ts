import { describe, expect, it } from 'vitest';
import { addr, closed, exec, forge, image, res, susp, transcript } from '../test/helpers.js';
import { isRunRecordError } from './errors.js';
import { decodeWire, decodeWireJson, encodeWire } from './wire.js';

const REC = forge([
  exec(1, ['c1', 'ü'], []),
  susp(image(2, 3)),
  res(image(2, 3), 18446744073709551615n),
  exec(4),
  susp(transcript(5)),
  res(transcript(5), 1n),
  closed('failed'),
]);
const wire = () => JSON.parse(JSON.stringify(encodeWire(REC)));

function malformed(json: unknown, code = 'MalformedRecord', index?: number) {
  try {
    decodeWire(json);
  } catch (e) {
    expect(isRunRecordError(e) && { code: e.code, index: e.index }).toEqual({ code, index });
    return;
  }
  throw new Error('decoded');
}

describe('wire form', () => {
  it('matches the spec’s shape: snake_case, idle_uj decimal string, flat snapshot, absent account', () => {
    const w = wire();
    expect(Object.keys(w)).toEqual(['format', 'unit_id', 'grants_id', 'segments', 'head']);
    expect(w.format).toBe('sandbox.runrecord/1');
    expect(w.segments[2]).toMatchObject({ idle_uj: '18446744073709551615', idle_provenance: 'measured' });
    expect(w.segments[1].snapshot).toEqual({ root: addr(2), memory: addr(3) });
    expect(w.segments[4].snapshot).toEqual({ transcript: addr(5) });
    expect('account' in w.segments[3]).toBe(false);
    expect(w.segments[0].account).toEqual({ dispatched: ['c1', 'ü'], resolved: [] });
  });

  it('decode ∘ encode is the identity, and so is encode ∘ decode', () => {
    expect(decodeWire(wire())).toEqual(REC);
    expect(encodeWire(decodeWire(wire()))).toEqual(wire());
    expect(decodeWireJson(JSON.stringify(encodeWire(REC)))).toEqual(REC);
  });

  it('refuses unknown kinds, unknown keys, missing fields, bad hex, non-canonical numbers (MalformedRecord, indexed)', () => {
    const cases: [string, (w: ReturnType<typeof wire>) => void, number | undefined][] = [
      ['unknown kind', (w) => (w.segments[3].kind = 'paused'), 3],
      ['unknown key', (w) => (w.segments[3].note = 'x'), 3],
      ['unknown snapshot key', (w) => (w.segments[1].snapshot.disk = addr(9)), 1],
      ['missing head', (w) => delete w.segments[0].head, 0],
      ['missing manifest', (w) => delete w.segments[4].manifest, 4],
      ['uppercase hex', (w) => (w.segments[3].attestation = addr(0xab).toUpperCase()), 3],
      ['short hex', (w) => (w.segments[3].attestation = 'abcd'), 3],
      ['idle_uj as number', (w) => (w.segments[2].idle_uj = 5), 2],
      ['idle_uj leading zero', (w) => (w.segments[5].idle_uj = '01'), 5],
      ['idle_uj over u64', (w) => (w.segments[2].idle_uj = '18446744073709551616'), 2],
      ['idle_uj negative', (w) => (w.segments[5].idle_uj = '-1'), 5],
      ['bad provenance', (w) => (w.segments[5].idle_provenance = 'guessed'), 5],
      ['bad reason', (w) => (w.segments[6].reason = 'done'), 6],
      ['account null', (w) => (w.segments[0].account = null), 0],
      ['call id not a string', (w) => (w.segments[0].account.dispatched = [1]), 0],
      ['lone surrogate call id', (w) => (w.segments[0].account.dispatched = ['\udc00']), 0],
      ['segment not an object', (w) => (w.segments[3] = 'executed'), 3],
      ['format', (w) => (w.format = 'sandbox.runrecord/2'), undefined],
      ['missing unit', (w) => delete w.unit_id, undefined],
      ['bad record head', (w) => (w.head = 'zz'), undefined],
      ['segments not a list', (w) => (w.segments = {}), undefined],
      ['unknown top-level key', (w) => (w.version = 1), undefined],
    ];
    for (const [, mutate, index] of cases) {
      const w = wire();
      mutate(w);
      malformed(w, 'MalformedRecord', index);
    }
    expect(() => decodeWireJson('{"format":')).toThrow(/MalformedRecord/);
  });

  it('a snapshot of neither/both forms decodes to MalformedSnapshot (after field checks)', () => {
    const w = wire();
    w.segments[4].snapshot = { transcript: addr(5), memory: addr(3) };
    malformed(w, 'MalformedSnapshot', 4);
    w.segments[4].snapshot = {};
    malformed(w, 'MalformedSnapshot', 4);
    w.segments[4].snapshot = { root: 'bad', transcript: addr(5) };
    malformed(w, 'MalformedRecord', 4);
  });
});
