// fast-check arbitraries from the app's own OpenAPI document (the JSON Schema subset zod-to-openapi writes:
// $ref, type, enum, pattern, min/max lengths and bounds, nullable, anyOf/oneOf/allOf, items, properties),
// salted with what breaks servers: lone surrogates, NUL, numbers past every column, nesting past the limit.
// Most generated values are valid or nearly so — that is what gets a fuzzer past the validator and into
// the core, where a 500 would hide.
import fc from 'fast-check';

export interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  nullable?: boolean;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
}

/** A string the JSON text will carry as a raw token instead (`"@@raw:<text>@@"` → `<text>`). */
export const raw = (text: string): string => `@@raw:${text}@@`;

/** Replace raw-token placeholders with their text: numbers JSON.stringify cannot write, deep nests. */
export function withRawTokens(json: string): string {
  return json.replace(/"@@raw:([^@]*)@@"/g, (_m, text: string) => text);
}

const nest = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;

/** Values servers choke on: the fuzzer's salt. */
export const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('\ud800', 'a\udfffb', '\udc00\ud800', 'ok\u0000nul', '\u0000', '😀', ''),
  fc.constantFrom(2 ** 31, 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53, 2 ** 63, -1, 0, 1.5, 1e308, -1e308),
  fc.constantFrom(raw('1e400'), raw('-1e400'), raw('9223372036854775808'), raw('-0')),
  fc.constantFrom(raw(nest(129)), raw(nest(2_000)), raw(nest(10_000)), raw(nest(127))),
  fc.constantFrom(null, true, [], {}, 'x'.repeat(300)),
);

const word = fc.oneof(
  fc.constantFrom('analysis', 'command', 'agent', 'eval', 'run.queued', 'run.*', 'default', 'UTC', '*'),
  fc.string({ maxLength: 16 }),
);

export class SchemaArbitraries {
  constructor(private readonly components: Record<string, Schema>) {}

  resolve(s: Schema): Schema {
    let cur = s;
    for (let i = 0; cur.$ref && i < 16; i++) {
      const name = cur.$ref.split('/').pop()!;
      cur = this.components[name] ?? {};
    }
    return cur;
  }

  /** A value for `schema`: valid most of the time, salted with `nasty` at every level. */
  value(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
    const valid = this.valid(this.resolve(schema), depth);
    return fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: nasty });
  }

  private valid(s: Schema, depth: number): fc.Arbitrary<unknown> {
    const nullable = (a: fc.Arbitrary<unknown>) => (s.nullable ? fc.option(a, { nil: null, freq: 6 }) : a);
    if (s.enum) return nullable(fc.constantFrom(...s.enum));
    const options = s.anyOf ?? s.oneOf;
    if (options && options.length > 0)
      return nullable(fc.oneof(...options.map((o) => this.value(o, depth + 1))));
    if (s.allOf && s.allOf.length > 0) {
      return fc
        .tuple(...s.allOf.map((o) => this.value(o, depth + 1)))
        .map((parts) =>
          parts.every((p) => p !== null && typeof p === 'object' && !Array.isArray(p))
            ? Object.assign({}, ...parts)
            : parts[0],
        );
    }
    switch (s.type) {
      case 'string':
        return nullable(this.string(s));
      case 'integer':
      case 'number': {
        const min = s.minimum ?? -1e6;
        const max = s.maximum ?? 1e6;
        const inRange =
          s.type === 'integer'
            ? fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) })
            : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
        return nullable(fc.oneof({ weight: 6, arbitrary: inRange }, { weight: 1, arbitrary: nasty }));
      }
      case 'boolean':
        return nullable(fc.boolean());
      case 'array': {
        if (depth > 4) return fc.constant([]);
        const item = s.items ? this.value(s.items, depth + 1) : fc.jsonValue({ maxDepth: 2 });
        return nullable(fc.array(item, { minLength: 0, maxLength: Math.min(s.maxItems ?? 3, 3) }));
      }
      case 'object':
        return nullable(this.object(s, depth));
      default:
        // No type (z.unknown(), JSON values): any JSON, or salt.
        return depth > 4
          ? fc.constant(null)
          : fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(word, nasty, { maxKeys: 3 }));
    }
  }

  private string(s: Schema): fc.Arbitrary<unknown> {
    if (s.format === 'date-time') {
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString());
    }
    const max = Math.min(s.maxLength ?? 24, 24);
    const min = Math.min(s.minLength ?? 0, max);
    const any = fc.string({ minLength: min, maxLength: Math.max(max, min) });
    let base: fc.Arbitrary<string> = any;
    if (s.pattern) {
      try {
        base = fc.stringMatching(new RegExp(s.pattern));
      } catch {
        base = any; // a pattern fast-check cannot generate from: plain strings (the validator decides)
      }
    }
    return fc.oneof({ weight: 5, arbitrary: base }, { weight: 1, arbitrary: word });
  }

  private object(s: Schema, depth: number): fc.Arbitrary<unknown> {
    if (depth > 5) return fc.constant({});
    const shape: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [k, v] of Object.entries(s.properties ?? {})) shape[k] = this.value(v, depth + 1);
    const required = s.required ?? [];
    const known = fc.record(shape, { requiredKeys: required.filter((k) => k in shape) });
    return fc
      .tuple(known, fc.option(fc.tuple(word, nasty), { nil: undefined, freq: 8 }))
      .map(([o, extra]) => (extra ? { ...o, [extra[0]]: extra[1] } : o));
  }
}
