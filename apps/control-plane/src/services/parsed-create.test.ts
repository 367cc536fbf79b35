// One parse per create: a value the edge's CreateRunInput produced is taken as it is; anything else is parsed.
import { describe, expect, it } from 'vitest';
import { markParsedCreate, parseCreateInput, safeParseCreate } from './parsed-create.js';
import { CreateRunInput } from './types.js';

const spec = { kind: 'analysis', subject: { config: { fn: 'echo' } } };

describe('parseCreateInput', () => {
  it('returns a value the edge parsed (marked) as it is', () => {
    const edge = markParsedCreate(CreateRunInput.parse(spec));
    expect(parseCreateInput(edge)).toBe(edge);
    const batch = safeParseCreate(spec);
    expect(batch.success).toBe(true);
    if (batch.success) expect(parseCreateInput(batch.data)).toBe(batch.data);
  });

  it('parses anything else: defaults applied, bad input refused', () => {
    const raw = { ...spec };
    const parsed = parseCreateInput(raw);
    expect(parsed).not.toBe(raw);
    expect(parsed).toEqual(CreateRunInput.parse(spec));
    expect(parsed.lifetime).toBe('task');
    expect(() => parseCreateInput({ kind: 'analysis', ttlSec: -1 })).toThrow();
    expect(() => parseCreateInput(null)).toThrow();
  });

  it('a refused batch item is not marked', () => {
    const bad = safeParseCreate({ kind: 'analysis', ttlSec: 0 });
    expect(bad.success).toBe(false);
  });
});
