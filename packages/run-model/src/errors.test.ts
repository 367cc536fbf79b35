import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isRunModelError, parseOrThrow, RUN_MODEL_ERROR_STATUS, RunModelError } from './index.js';

describe('RunModelError', () => {
  it('maps each code to one HTTP status', () => {
    expect(RUN_MODEL_ERROR_STATUS).toEqual({
      invalid_input: 400,
      illegal_transition: 409,
      already_terminal: 409,
      causation_refused: 429,
    });
    for (const code of Object.keys(RUN_MODEL_ERROR_STATUS) as (keyof typeof RUN_MODEL_ERROR_STATUS)[]) {
      const e = new RunModelError(code, 'm', { a: 1 });
      expect(e).toBeInstanceOf(Error);
      expect(isRunModelError(e)).toBe(true);
      expect(e.httpStatus).toBe(RUN_MODEL_ERROR_STATUS[code]);
      expect(JSON.parse(JSON.stringify(e))).toEqual({ code, message: 'm', details: { a: 1 } });
    }
    expect(isRunModelError(new Error('x'))).toBe(false);
  });
  it('parseOrThrow returns data or an invalid_input with the issue paths', () => {
    expect(parseOrThrow(z.object({ a: z.number() }), { a: 1 })).toEqual({ a: 1 });
    expect(() =>
      parseOrThrow(z.object({ a: z.object({ b: z.number() }) }), { a: { b: 'x' } }, 'thing'),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        message: expect.stringMatching(/^invalid thing: a\.b/),
      }),
    );
  });
  it("parseOrThrow keeps zod's issues: their codes, their paths as segments, a bound's origin and maximum", () => {
    const schema = z.strictObject({
      a: z.object({ b: z.number() }),
      n: z.int().max(10),
      list: z.array(z.string()),
    });
    let caught: unknown;
    try {
      parseOrThrow(schema, { a: { b: 'x' }, n: 11, list: ['ok', 3], extra: true }, 'thing');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(RunModelError);
    const e = caught as RunModelError;
    expect(e.code).toBe('invalid_input');
    expect(e.issues).toEqual([
      expect.objectContaining({ code: 'invalid_type', path: ['a', 'b'], expected: 'number' }),
      expect.objectContaining({ code: 'too_big', path: ['n'], origin: 'number', maximum: 10 }),
      expect.objectContaining({ code: 'invalid_type', path: ['list', 1], expected: 'string' }),
      expect.objectContaining({ code: 'unrecognized_keys', path: [], keys: ['extra'] }),
    ]);
    // The issues travel with the error (toJSON), never the offending input echoed back.
    const json = JSON.parse(JSON.stringify(e)) as { issues: { input?: unknown }[] };
    expect(json.issues).toHaveLength(4);
    expect(json.issues.every((i) => !('input' in i))).toBe(true);
  });
  it('a refusal of no schema carries no issues', () => {
    expect(new RunModelError('illegal_transition', 'm').issues).toBeUndefined();
    expect(new RunModelError('invalid_input', 'm', { a: 1 }).toJSON()).not.toHaveProperty('issues');
  });
});
