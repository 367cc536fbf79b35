// JSON values as they travel and sit in JSON columns — every own key of an object kept, `__proto__` included.
//
// JSON.parse makes a key named `__proto__` an own data property like any other, and canonical JSON writes
// it. zod's records (and z.json()) leave such a key out of what they build, silently: assigning it would set
// the built object's prototype. A run's subject, its `outputs.result`, a trace event's input or a fact's data
// would then be stored, digested and returned without it. Here every JSON object is parsed by `ownProtoKeys`
// around zod's record: the key rides through zod under an escaped name and is put back as an own data
// property (Object.defineProperty — never `o['__proto__'] = v`, which is prototype pollution).
//
// Escaping: a key that is `__proto__` or starts with ESC gets one more ESC in front; restoring drops one.
// The map is one-to-one, so no key the client sent can collide with an escaped one. The schemas keep the
// shape z.json() had (a lazy union whose object member is a record), so documents generated from them do
// not change. Cost: one scan of each object's keys on the way in and one on the way out; a copy only for an
// object that has such a key.
import { z } from 'zod';

/** Any JSON value (no undefined, functions, NaN or Infinity): what fits a JSON column. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

const PROTO = '__proto__';
/** Prefixes an escaped key. NUL: never in a key a client can send (the control plane refuses it in bodies). */
const ESC = '\u0000';

const needsEscape = (key: PropertyKey): key is string =>
  typeof key === 'string' && (key === PROTO || key.startsWith(ESC));
const isEscaped = (key: PropertyKey): key is string => typeof key === 'string' && key.startsWith(ESC);

/** `input` with its `__proto__` (and ESC-led) keys escaped; `input` itself when it has none or is no record. */
function escapeKeys(input: unknown): unknown {
  if (!z.core.util.isPlainObject(input)) return input; // the record refuses it as it is
  const keys = Reflect.ownKeys(input);
  if (!keys.some(needsEscape)) return input;
  const from = input as Record<PropertyKey, unknown>;
  const out: Record<PropertyKey, unknown> = {};
  for (const key of keys) {
    if (!Object.prototype.propertyIsEnumerable.call(from, key)) continue; // as the record skips it
    // An own `__proto__` data property shadows the accessor, so `from[key]` reads the value itself.
    out[needsEscape(key) ? ESC + key : key] = from[key];
  }
  return out;
}

/** `parsed` with its escaped keys restored as own data properties (a new object only when it has any). */
function restoreKeys<T>(parsed: T): T {
  if (parsed === null || typeof parsed !== 'object') return parsed;
  const keys = Reflect.ownKeys(parsed);
  if (!keys.some(isEscaped)) return parsed;
  const from = parsed as Record<PropertyKey, unknown>;
  const out: Record<PropertyKey, unknown> = {};
  for (const key of keys) {
    const value = from[key];
    // `defineProperty` for every key: the restored `__proto__` becomes data, never the prototype.
    const own = isEscaped(key) ? key.slice(ESC.length) : key;
    Object.defineProperty(out, own, { value, enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/** Where an issue of an escaped key points: at the key the input has (deeper keys are their own level's). */
function restorePaths(ctx: { issues: z.core.$ZodRawIssue[] }): void {
  for (const issue of ctx.issues) {
    const head = issue.path?.[0];
    // Each issue's path is its own array (zod prefixes by copying), so it is fixed where it is.
    if (issue.path && head !== undefined && isEscaped(head)) issue.path[0] = head.slice(ESC.length);
  }
}

/**
 * `schema` (a record, or an object schema with a catchall) keeping an own `__proto__` key of its input as an
 * own data property of its output, parsed by the schema's value type like any other key (an issue there names
 * the key as sent). Not for strict objects: there the escaped key would be refused as unrecognized. A
 * generated document shows `schema`.
 */
export function ownProtoKeys<T extends z.ZodType<object>>(schema: T): z.ZodType<z.output<T>, z.input<T>> {
  return z
    .pipe(z.transform(escapeKeys), schema)
    .superRefine((_, ctx) => restorePaths(ctx), { when: (payload) => payload.issues.length > 0 })
    .pipe(z.transform((parsed: z.output<T>) => restoreKeys(parsed))) as unknown as z.ZodType<
    z.output<T>,
    z.input<T>
  >;
}

/**
 * Any JSON value, its objects keeping every own key (`__proto__` included). The shape of z.json(): a lazy
 * union of the scalars, arrays of JSON values and JSON objects.
 */
export const JsonValue: z.ZodType<JsonValue, JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), JsonObject]),
);

/** A JSON object (a record of JSON values), keeping every own key. */
export const JsonObject: z.ZodType<{ [key: string]: JsonValue }, { [key: string]: JsonValue }> = ownProtoKeys(
  z.record(z.string(), JsonValue),
);
export type JsonObject = z.infer<typeof JsonObject>;
