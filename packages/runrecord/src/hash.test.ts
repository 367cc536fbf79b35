import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { bytesToHex } from './bytes.js';
import { availableHashBackends, blake3, blake3With, hashBackend, setHashBackend } from './hash.js';

describe('BLAKE3 backends', () => {
  afterEach(() => setHashBackend('hash-wasm'));

  it('uses hash-wasm by default in Node (WebAssembly available)', () => {
    expect(availableHashBackends()).toEqual(['hash-wasm', 'noble']);
    expect(hashBackend()).toBe('hash-wasm');
  });

  it('matches the official BLAKE3 vectors on both backends', () => {
    for (const b of availableHashBackends()) {
      expect(bytesToHex(blake3With(b, new Uint8Array(0)))).toBe(
        'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
      );
      expect(bytesToHex(blake3With(b, new TextEncoder().encode('abc')))).toBe(
        '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85',
      );
    }
  });

  it('both backends agree on any input (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (data) => {
        expect(blake3With('hash-wasm', data)).toEqual(blake3With('noble', data));
      }),
      { numRuns: 300 },
    );
  });

  it('switching the backend changes nothing observable but the backend name', () => {
    const data = new TextEncoder().encode('sandbox.runrecord/1');
    const wasm = blake3(data);
    setHashBackend('noble');
    expect(hashBackend()).toBe('noble');
    expect(blake3(data)).toEqual(wasm);
  });
});
