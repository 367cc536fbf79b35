import { blake3 as noble } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import { addr, ascii, concat, exec, GRANTS, hexBytes, UNIT } from '../test/helpers.js';
import { genesisHead, nextHead } from './chain.js';
import { segmentBytes } from './segment.js';

const A = hexBytes(addr(0xaa));
const B = hexBytes(addr(0xbb));
const C = hexBytes(addr(0xcc));
const M = hexBytes(addr(0x99));
const u32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

describe('segment canonical bytes (hand-written layouts)', () => {
  it('executed without account: 0x01 ‖ attestation', () => {
    expect(segmentBytes(exec(0xaa))).toEqual(concat([0x01], A));
  });

  it('executed with account: 0xAC ‖ u32 n ‖ str×n ‖ u32 m ‖ str×m, order kept, UTF-8 lengths', () => {
    const bytes = segmentBytes({
      kind: 'executed',
      attestation: addr(0xaa),
      account: { dispatched: ['c2', 'é'], resolved: ['c1'] },
    });
    const expected = concat(
      [0x01],
      A,
      [0xac],
      u32(2),
      u32(2),
      ascii('c2'),
      u32(2),
      [0xc3, 0xa9],
      u32(1),
      u32(2),
      ascii('c1'),
    );
    expect(bytes).toEqual(expected);
  });

  it('not accounted and accounted-with-no-calls differ', () => {
    const none = segmentBytes(exec(0xaa));
    const empty = segmentBytes(exec(0xaa, [], []));
    expect(empty).toEqual(concat([0x01], A, [0xac], u32(0), u32(0)));
    expect(none).not.toEqual(empty);
  });

  it('pinned image layout: 0x02 ‖ 0x01 ‖ root ‖ 0x00 ‖ manifest, and with memory 0x01 ‖ memory', () => {
    expect(segmentBytes({ kind: 'suspended', snapshot: { root: addr(0xaa) }, manifest: addr(0x99) })).toEqual(
      concat([0x02, 0x01], A, [0x00], M),
    );
    expect(
      segmentBytes({
        kind: 'suspended',
        snapshot: { root: addr(0xaa), memory: addr(0xbb) },
        manifest: addr(0x99),
      }),
    ).toEqual(concat([0x02, 0x01], A, [0x01], B, M));
  });

  it('transcript: 0x02 ‖ transcript; differs from an image over the same inner address', () => {
    const t = segmentBytes({ kind: 'suspended', snapshot: { transcript: addr(0xaa) }, manifest: addr(0x99) });
    expect(t).toEqual(concat([0x02, 0x02], A, M));
    expect(t).not.toEqual(
      segmentBytes({ kind: 'suspended', snapshot: { root: addr(0xaa) }, manifest: addr(0x99) }),
    );
  });

  it('resumed: 0x03 ‖ snap ‖ manifest ‖ u64 BE idle_uj ‖ provenance byte', () => {
    const bytes = segmentBytes({
      kind: 'resumed',
      snapshot: { transcript: addr(0xcc) },
      manifest: addr(0x99),
      idleUj: 0x0102030405060708n,
      idleProvenance: 'estimated',
    });
    expect(bytes).toEqual(concat([0x03, 0x02], C, M, [1, 2, 3, 4, 5, 6, 7, 8], [0x02]));
    const measured = segmentBytes({
      kind: 'resumed',
      snapshot: { root: addr(0xcc) },
      manifest: addr(0x99),
      idleUj: 2n ** 64n - 1n,
      idleProvenance: 'measured',
    });
    expect(measured).toEqual(concat([0x03, 0x01], C, [0x00], M, Array(8).fill(0xff), [0x01]));
  });

  it('closed: 0x04 ‖ reason byte', () => {
    const reasons = ['completed', 'abandoned', 'failed', 'cancelled'] as const;
    reasons.forEach((reason, i) => {
      expect(segmentBytes({ kind: 'closed', reason })).toEqual(Uint8Array.from([0x04, i + 1]));
    });
  });
});

describe('chain', () => {
  it('genesis = H("sandbox.runrecord/1" ‖ unit_id ‖ grants_id), computed independently with noble', () => {
    const expected = Buffer.from(
      noble(concat(ascii('sandbox.runrecord/1'), hexBytes(UNIT), hexBytes(GRANTS))),
    ).toString('hex');
    expect(ascii('sandbox.runrecord/1').length).toBe(19);
    expect(genesisHead(UNIT, GRANTS)).toBe(expected);
    expect(genesisHead(GRANTS, UNIT)).not.toBe(expected);
  });

  it('headₙ = H(headₙ₋₁ ‖ seg)', () => {
    const g = genesisHead(UNIT, GRANTS);
    const expected = Buffer.from(noble(concat(hexBytes(g), [0x01], A))).toString('hex');
    expect(nextHead(g, exec(0xaa))).toBe(expected);
  });
});
