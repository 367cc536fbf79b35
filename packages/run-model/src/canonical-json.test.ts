import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonl } from './canonical-json.js';
import { isRunModelError } from './errors.js';

describe('canonical JSON', () => {
  it('sorts keys by UTF-16 code units at every depth and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: true }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":true,"z":null}]},"b":1}',
    );
    // RFC 8785 §3.2.3's ordering: code units, so U+20AC sorts before the surrogate pair of U+1F600.
    const keys = { '\u20ac': 1, '\r': 2, '\ufb33': 3, '1': 4, '\ud83d\ude00': 5, '\u0080': 6, '\u00f6': 7 };
    expect(canonicalJson(keys)).toBe(
      '{"\\r":2,"1":4,"\u0080":6,"\u00f6":7,"\u20ac":1,"\ud83d\ude00":5,"\ufb33":3}',
    );
  });

  it('never confuses two key lists that join to the same text', () => {
    expect(canonicalJson({ 'a\u0000b': 1, c: 2 })).toBe('{"a\\u0000b":1,"c":2}');
    expect(canonicalJson({ a: 1, 'b\u0000c': 2 })).toBe('{"a":1,"b\\u0000c":2}');
  });

  it('writes numbers as ECMAScript does and strings with minimal escapes', () => {
    expect(canonicalJson([0, -0, 1e21, 1e-7, 4.5, 0.002, 333333333.3333333, -1.5e300, 100])).toBe(
      '[0,0,1e+21,1e-7,4.5,0.002,333333333.3333333,-1.5e+300,100]',
    );
    expect(canonicalJson('a"b\\c\n\t\u0001é😀/')).toBe('"a\\"b\\\\c\\n\\t\\u0001é😀/"');
  });

  it('leaves out undefined members and refuses what JSON cannot hold', () => {
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, () => 1, 1n]) {
      let err: unknown;
      try {
        canonicalJson(bad);
      } catch (e) {
        err = e;
      }
      expect(isRunModelError(err) && err.code).toBe('invalid_input');
    }
  });

  it('writes an own __proto__ key as a member, the same from JSON text and from a map without a prototype', () => {
    const text = '{"__proto__":{"__proto__":1,"a":2},"constructor":"c","toString":"t"}';
    const parsed: unknown = JSON.parse(text);
    const bare = Object.create(null) as Record<string, unknown>;
    Object.defineProperty(bare, 'toString', { value: 't', enumerable: true });
    Object.defineProperty(bare, '__proto__', {
      value: JSON.parse('{"a":2,"__proto__":1}'),
      enumerable: true,
    });
    Object.defineProperty(bare, 'constructor', { value: 'c', enumerable: true });
    expect(canonicalJson(parsed)).toBe(text);
    expect(canonicalJson(bare)).toBe(text);
    expect(canonicalJson(JSON.parse(canonicalJson(parsed)))).toBe(text); // read back, the same bytes
  });

  it('writes a value with toJSON (a Date) as JSON.stringify does, keys still sorted', () => {
    const at = new Date('2026-12-05T16:00:00.000Z');
    expect(canonicalJson({ z: at, a: [at] })).toBe(
      '{"a":["2026-12-05T16:00:00.000Z"],"z":"2026-12-05T16:00:00.000Z"}',
    );
    expect(canonicalJson({ toJSON: () => ({ b: 1, a: 2 }) })).toBe('{"a":2,"b":1}');
  });

  it('JSONL ends every line with a newline; the empty trajectory is empty', () => {
    expect(canonicalJsonl([{ b: 2, a: 1 }, [1]])).toBe('{"a":1,"b":2}\n[1]\n');
    expect(canonicalJsonl([])).toBe('');
  });

  it('is a function of the value alone: key order never matters, and it parses back to the value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
        const reversed = JSON.parse(JSON.stringify(v), (_k, x) =>
          x && typeof x === 'object' && !Array.isArray(x)
            ? Object.fromEntries(Object.entries(x).reverse())
            : x,
        );
        expect(canonicalJson(reversed)).toBe(text);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});
