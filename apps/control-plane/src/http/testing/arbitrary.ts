// fast-check arbitraries derived from zod schemas (the subset our inputs use), mixed with garbage:
// most generated values are valid or nearly so, which is what gets a fuzzer past the validator and
// into the services, where a 500 would hide.
import fc from 'fast-check';
import type { z } from 'zod';

interface Def {
  type: string;
  checks?: { _zod: { def: Record<string, unknown> } }[];
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, string>;
  values?: unknown[];
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;
const checksOf = (d: Def) => (d.checks ?? []).map((c) => c._zod.def);

/** Strings fuzzers like: words our schemas use, ids, edge lengths, unicode, injection-ish text. */
const interestingString = fc.oneof(
  fc.constantFrom(
    'analysis',
    'eval',
    'agent',
    'member',
    'admin',
    'queued',
    'default',
    'run_1',
    '',
    ' ',
    '*',
    'run.*',
  ),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constantFrom(
    "' OR 1=1 --",
    '../../etc/passwd',
    '%00',
    '\u0000',
    'x'.repeat(300),
    '{{7*7}}',
    '0 0 * * *',
  ),
);

export function arbitraryFor(schema: z.ZodType, depth = 0): fc.Arbitrary<unknown> {
  const d = defOf(schema);
  switch (d.type) {
    case 'string': {
      const checks = checksOf(d);
      const pattern = checks.find((c) => c.format === 'regex')?.pattern;
      const min = Number(checks.find((c) => c.check === 'min_length')?.minimum ?? 0);
      const max = Number(checks.find((c) => c.check === 'max_length')?.maximum ?? 40);
      const valid =
        pattern instanceof RegExp
          ? fc.stringMatching(pattern)
          : fc.string({ minLength: min, maxLength: Math.min(max, 40) });
      return fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: interestingString });
    }
    case 'number': {
      const checks = checksOf(d);
      const isInt = checks.some((c) => c.format === 'safeint' || c.format === 'int32');
      const lo = checks.find((c) => c.check === 'greater_than')?.value;
      const hi = checks.find((c) => c.check === 'less_than')?.value;
      const min = typeof lo === 'number' ? lo : -1e6;
      const max = typeof hi === 'number' ? hi : 1e6;
      const valid = isInt
        ? fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31) })
        : fc.double({ min, max, noNaN: true });
      return fc.oneof(
        { weight: 4, arbitrary: valid },
        { weight: 1, arbitrary: fc.constantFrom(-1, 0, 1.5, 1e308, -0, 2 ** 53) },
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'enum':
      return fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...Object.values(d.entries ?? { x: 'x' })) },
        { weight: 1, arbitrary: interestingString },
      );
    case 'literal':
      return fc.constantFrom(...(d.values ?? [null]));
    case 'optional':
    case 'default':
      return fc.option(arbitraryFor(d.innerType!, depth), { nil: undefined, freq: 3 });
    case 'nullable':
      return fc.option(arbitraryFor(d.innerType!, depth), { nil: null, freq: 4 });
    case 'array': {
      if (depth > 3) return fc.constant([]);
      const max = Number(checksOf(d).find((c) => c.check === 'max_length')?.maximum ?? 4);
      return fc.array(arbitraryFor(d.element!, depth + 1), { maxLength: Math.min(max, 4) });
    }
    case 'object': {
      if (depth > 4) return fc.constant({});
      const shape: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(d.shape ?? {})) shape[k] = arbitraryFor(v, depth + 1);
      return fc
        .record(shape, { requiredKeys: [] })
        .map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
    }
    case 'record':
      return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    case 'union':
      return fc.oneof(...(d.options ?? []).map((o) => arbitraryFor(o, depth + 1)));
    case 'pipe':
      return arbitraryFor(d.in!, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A body: mostly schema-shaped (sometimes with a field mutated), sometimes any JSON at all. */
export function bodyArbitrary(schema: z.ZodType): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: arbitraryFor(schema) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(arbitraryFor(schema), fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 1 }))
        .map(([b, k, v]) => (b && typeof b === 'object' && !Array.isArray(b) ? { ...b, [k]: v } : b)),
    },
  );
}

/** Raw body text: valid JSON of the body, or not JSON at all. */
export function rawBodyArbitrary(schema: z.ZodType): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: bodyArbitrary(schema).map((b) => JSON.stringify(b) ?? 'null') },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{',
        '{"kind":',
        '[1,2',
        'null',
        '""',
        '{"a":1}}',
        '\u0000',
        '{"__proto__":{"x":1}}',
      ),
    },
  );
}
