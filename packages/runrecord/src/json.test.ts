import { describe, expect, it } from 'vitest';
import { firstDuplicateName, parseJson, scanJson } from './json.js';

describe('firstDuplicateName', () => {
  it('finds a name twice in one object, at any depth, after unescaping', () => {
    expect(firstDuplicateName('{"a":1,"a":2}')).toBe('a');
    expect(firstDuplicateName('{"x":[{"b":1},{"c":{"d":1, "d" :2}}]}')).toBe('d');
    expect(firstDuplicateName('{"a":1,"\\u0061":2}')).toBe('a');
    expect(firstDuplicateName('{"a\\\\":1,"a\\\\":2}')).toBe('a\\');
  });

  it('does not confuse siblings, values, arrays or escaped quotes with duplicates', () => {
    expect(firstDuplicateName('[{"a":1},{"a":2}]')).toBeUndefined();
    expect(firstDuplicateName('{"a":"a","b":["a","a"],"c":{"a":1}}')).toBeUndefined();
    expect(firstDuplicateName('{"a\\"":1,"a":2,"a\\\\":3}')).toBeUndefined();
    expect(firstDuplicateName('{"k":"\\"a\\":1,\\"a\\":2"}')).toBeUndefined();
    expect(firstDuplicateName('"unterminated')).toBeUndefined();
  });

  it('parseJson refuses duplicates and non-JSON with MalformedRecord', () => {
    expect(() => parseJson('{"a":1,"a":1}')).toThrow(expect.objectContaining({ code: 'MalformedRecord' }));
    expect(() => parseJson('{')).toThrow(expect.objectContaining({ code: 'MalformedRecord' }));
    expect(parseJson('{"a":{"a":1}}')).toEqual({ a: { a: 1 } });
  });
});

describe('exit_code numbers', () => {
  it('finds exit_code values written with a fraction or an exponent, nowhere else', () => {
    expect(scanJson('{"exit_code": 1.0, "b": 2.5, "c": [1e3]}').fractional).toEqual([[14, 17]]);
    expect(scanJson('{"exit_code":-2e+1}').fractional).toEqual([[13, 18]]);
    expect(scanJson('{"exit_code": -0, "x": {"exit_code": 7}}').fractional).toEqual([]);
    expect(scanJson('{"exit_code": "1.0", "m": "\\"exit_code\\": 1.0"}').fractional).toEqual([]);
  });

  it('parseJson reads them as null, and nothing else changes', () => {
    expect(parseJson('{"a": [{"exit_code": 1.0, "n": 1.5}], "exit_code" : 3}')).toEqual({
      a: [{ exit_code: null, n: 1.5 }],
      exit_code: 3,
    });
  });
});
