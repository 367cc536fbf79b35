// StreamingDigest's spares: a digest given back is reused, reset, by exactly one later caller.
import { describe, expect, it } from 'vitest';
import { StreamingDigest } from './digest.js';

describe('StreamingDigest.take / release', () => {
  it('a released digest is taken again, reset; released twice it still serves one caller', async () => {
    const fresh = await StreamingDigest.create();
    fresh.update('abc');
    const expected = fresh.digest();
    const a = await StreamingDigest.take();
    a.update('some other journal');
    a.release();
    a.release(); // ignored: `a` is among the spares once
    const b = await StreamingDigest.take();
    const c = await StreamingDigest.take();
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    b.update('abc');
    expect(b.digest()).toBe(expected);
    expect(b.bytes).toBe(3);
  });
});
