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
});
