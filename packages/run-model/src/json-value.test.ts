// JSON values keep every own key, `__proto__` included (JSON.parse makes it an own data property; zod's
// records drop it): the parse of any JSON value is that value, own `__proto__` keys and all, as plain objects,
// and no parse touches Object.prototype.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SPECS } from '../test/fixtures.js';
import {
  createRun,
  EventFilter,
  JsonObject,
  JsonValue,
  matchEvent,
  PlatformEvent,
  RunOutputs,
  TraceEvent,
} from './index.js';

const PROTO = '__proto__';
const ownProto = (o: object): PropertyDescriptor | undefined => Object.getOwnPropertyDescriptor(o, PROTO);
const isObject = (v: unknown): v is object => v !== null && typeof v === 'object';

/** Every object of `v` (own properties only, `__proto__` included), `v` first. */
function objectsOf(v: unknown): object[] {
  const out: object[] = [];
  const stack = [v];
  while (stack.length > 0) {
    const here = stack.pop();
    if (!isObject(here)) continue;
    out.push(here);
    for (const key of Reflect.ownKeys(here)) stack.push(Object.getOwnPropertyDescriptor(here, key)?.value);
  }
  return out;
}

/**
 * `a` and `b` are the same JSON: same own keys in the same order (`__proto__` a data property where either
 * has it), same values; every object of `a` a plain object or array.
 */
function sameJson(a: unknown, b: unknown, path = '$'): void {
  if (!isObject(a) || !isObject(b)) {
    expect(a, path).toBe(b);
    return;
  }
  expect(Array.isArray(a), path).toBe(Array.isArray(b));
  expect(Object.getPrototypeOf(a), path).toBe(Array.isArray(a) ? Array.prototype : Object.prototype);
  const keys = Reflect.ownKeys(a).filter((k) => k !== 'length' || !Array.isArray(a));
  expect(keys, path).toEqual(Reflect.ownKeys(b).filter((k) => k !== 'length' || !Array.isArray(b)));
  for (const key of keys) {
    const da = Object.getOwnPropertyDescriptor(a, key)!;
    const db = Object.getOwnPropertyDescriptor(b, key)!;
    expect('value' in da && da.enumerable, `${path}.${String(key)} is an enumerable data property`).toBe(
      true,
    );
    sameJson(da.value, db.value, `${path}.${String(key)}`);
  }
}

/** A JSON value with own `__proto__` keys put into some of its objects (their values JSON in turn). */
const withProtoKeys = fc
  .tuple(
    fc.jsonValue({ maxDepth: 4 }),
    fc.array(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 2 })), { minLength: 1, maxLength: 4 }),
  )
  .map(([value, injections]) => {
    // Through JSON text, as a client's body arrives: JSON.parse makes each `__proto__` an own property.
    const root = JSON.parse(JSON.stringify({ value })) as object;
    for (const [pick, injected] of injections) {
      const plain = objectsOf(root).filter((o) => !Array.isArray(o));
      const target = plain[pick % plain.length]!;
      const copy = JSON.parse(JSON.stringify(injected)) as unknown;
      Object.defineProperty(target, PROTO, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return JSON.parse(JSON.stringify(root)) as unknown;
  });

const prototypeNames = () => Reflect.ownKeys(Object.prototype).map(String).sort();

describe('JsonValue keeps own `__proto__` keys', () => {
  it('parse(x) is x — own `__proto__` keys, order, plain objects — sync and async; Object.prototype untouched', async () => {
    const before = prototypeNames();
    await fc.assert(
      fc.asyncProperty(withProtoKeys, async (x) => {
        expect(objectsOf(x).some((o) => ownProto(o) !== undefined)).toBe(true);
        sameJson(JsonValue.parse(x), x);
        sameJson(await JsonValue.parseAsync(x), x);
        expect(JSON.stringify(JsonValue.parse(x))).toBe(JSON.stringify(x));
        expect(({} as Record<string, unknown>).x).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    expect(prototypeNames()).toEqual(before);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('any JSON value without such keys parses to itself as before', () => {
    fc.assert(fc.property(fc.jsonValue(), (x) => sameJson(JsonValue.parse(x), x)));
  });

  it('a key led by the escape character round-trips; a non-JSON value under `__proto__` is refused there', () => {
    const x = JSON.parse('{"\\u0000__proto__":1,"__proto__":{"\\u0000":2},"\\u0000\\u0000a":3}') as unknown;
    sameJson(JsonObject.parse(x), x);
    const bad = JSON.parse('{"a":{"__proto__":{"b":1}}}') as { a: Record<string, { b: unknown }> };
    ownProto(bad.a)!.value.b = Number.NaN;
    const r = JsonValue.safeParse(bad);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain('"path":["__proto__"]');
    expect(JSON.stringify(r.error?.issues)).not.toContain('\\u0000');
    const filter = EventFilter.safeParse(JSON.parse('{"__proto__":{"a":1}}'));
    expect(filter.error?.issues[0]?.path).toEqual(['__proto__']);
  });
});

describe('the fields that hold free-form JSON keep them', () => {
  const PROTO_OBJECT = '{"__proto__":{"x":1},"a":1}';

  it('an open kind subject, outputs.result, a tool call input and a fact’s data', () => {
    const subject = JSON.parse(PROTO_OBJECT) as Record<string, unknown>;
    const { run } = createRun(
      { ...SPECS.analysis, kind: 'acme_widget', subject },
      { id: 'run_p', tenant: 't_1', createdBy: 'u_1', now: '2026-01-01T00:00:00Z' },
    );
    sameJson(run.subject, subject);
    const outputs = RunOutputs.parse({
      artifacts: [],
      files: [],
      scores: [],
      result: JSON.parse(PROTO_OBJECT),
    });
    sameJson(outputs.result, JSON.parse(PROTO_OBJECT));
    const call = TraceEvent.parse(
      JSON.parse(
        `{"type":"tool_call","seq":1,"ts":"2026-01-01T00:00:00Z","runId":"r","callId":"c","tool":"t","input":${PROTO_OBJECT}}`,
      ),
    );
    sameJson((call as { input: unknown }).input, JSON.parse(PROTO_OBJECT));
    const fact = PlatformEvent.parse(
      JSON.parse(
        `{"id":"e","tenant":"t","kind":"run.settled","at":"2026-01-01T00:00:00Z","data":${PROTO_OBJECT}}`,
      ),
    );
    sameJson(fact.data, JSON.parse(PROTO_OBJECT));
  });

  it('a selector filter on a `__proto__` field is kept: it matches only events whose data has it', () => {
    const filter = EventFilter.parse(JSON.parse('{"__proto__":"x"}'));
    expect(JSON.stringify(filter)).toBe('{"__proto__":"x"}');
    const event = (data: Record<string, unknown>): PlatformEvent => ({
      id: 'e',
      tenant: 't',
      kind: 'run.settled',
      at: '2026-01-01T00:00:00Z',
      data: data as PlatformEvent['data'],
    });
    const selector = { eventKind: 'run.settled', filter };
    expect(matchEvent({ tenant: 't', selector }, event({ a: 1 }))).toBe(false);
    expect(matchEvent({ tenant: 't', selector }, event(JSON.parse('{"__proto__":"x"}')))).toBe(true);
  });
});
