import { blake3 } from '@noble/hashes/blake3.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hex } from '../test/naive.js';
import { decodeLeaf, encodeLeaf, type HeadLeaf, idHash, isLeafBytes, leafFor } from './leaf.js';

const H = (s: string) => hex(blake3(new TextEncoder().encode(s)));
const HEAD = 'ab'.repeat(32);

describe('leaf bytes', () => {
  it('lay out tag ‖ H(tenant) ‖ H(run) ‖ H(group) ‖ u64 length ‖ head ‖ u64 logged_ms (162 bytes)', () => {
    const leaf = leafFor({
      tenantId: 't-1',
      runId: 'run-é',
      groupId: 'g',
      length: 258,
      head: HEAD,
      loggedMs: 1_700_000_000_123,
    });
    const bytes = encodeLeaf(leaf);
    const want =
      Buffer.from('everdict.headlog/1', 'ascii').toString('hex') +
      H('t-1') +
      H('run-é') +
      H('g') +
      '0000000000000102' +
      HEAD +
      (1_700_000_000_123).toString(16).padStart(16, '0');
    expect(hex(bytes)).toBe(want);
    expect(bytes.length).toBe(162);
  });

  it('a run outside any group has 32 zero bytes, decoded as null', () => {
    const bytes = encodeLeaf(leafFor({ tenantId: 't', runId: 'r', length: 1, head: HEAD, loggedMs: 0 }));
    expect(hex(bytes.subarray(82, 114))).toBe('00'.repeat(32));
    expect(decodeLeaf(bytes).groupHash).toBeNull();
  });

  it('round-trips every leaf', () => {
    const h = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(hex);
    fc.assert(
      fc.property(
        h,
        h,
        fc.option(h),
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        h,
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        (t, r, g, length, head, loggedMs) => {
          const leaf: HeadLeaf = {
            tenantHash: t,
            runHash: r,
            groupHash: g === '00'.repeat(32) ? null : g,
            length,
            head,
            loggedMs,
          };
          const bytes = encodeLeaf(leaf);
          expect(isLeafBytes(bytes)).toBe(true);
          expect(decodeLeaf(bytes)).toEqual(leaf);
        },
      ),
    );
  });

  it('refuses what cannot be encoded or decoded: MalformedLeaf', () => {
    const ok = { tenantHash: HEAD, runHash: HEAD, groupHash: null, length: 1, head: HEAD, loggedMs: 1 };
    for (const bad of [
      { ...ok, head: HEAD.toUpperCase() },
      { ...ok, runHash: HEAD.slice(2) },
      { ...ok, length: -1 },
      { ...ok, length: 1.5 },
      { ...ok, loggedMs: 2 ** 53 },
    ]) {
      expect(() => encodeLeaf(bad), JSON.stringify(bad)).toThrow(/MalformedLeaf/);
    }
    const bytes = encodeLeaf(ok);
    expect(() => decodeLeaf(bytes.subarray(1))).toThrow(/MalformedLeaf/);
    const wrongTag = bytes.slice();
    wrongTag[0] = 0x45;
    expect(() => decodeLeaf(wrongTag)).toThrow(/MalformedLeaf/);
    const huge = bytes.slice();
    huge[114] = 0xff; // length's top byte: above 2^53
    expect(() => decodeLeaf(huge)).toThrow(/MalformedLeaf/);
    expect(() => idHash('\uD800')).toThrow(/MalformedLeaf/);
  });

  it('hashes ids as UTF-8', () => {
    expect(idHash('run-é')).toBe(H('run-é'));
    expect(idHash('')).toBe(H(''));
  });
});
