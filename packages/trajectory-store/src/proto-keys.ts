// A key named `__proto__` is data like any other key of an event's JSON (a tool's input, a span's attributes):
// JSON.parse keeps it as an own property, and canonical JSON writes it. zod 4 leaves it out of what it parses —
// silently, wherever it builds a plain object (records, z.json(), loose objects) — so without this the event
// would be stored without it. (A strict object's own `__proto__` zod refuses as an unrecognized key.)
// `keepProtoKeys` puts every such key back, as an own data property of the parsed object, its value parsed as
// JSON in turn. Assignment (`o[k] = v`) would set the object's prototype instead, so it is defined.
import { JsonValue } from '@everdict/run-model';
import { TrajectoryStoreError } from './errors.js';

const PROTO = '__proto__';

/** Where a value sits: its key, then its parent's (a list read only when a value is refused). */
type At = { readonly key: string | number; readonly up: At } | null;

function pathOf(at: At): (string | number)[] {
  const path: (string | number)[] = [];
  for (let a = at; a; a = a.up) path.unshift(a.key);
  return path;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The JSON value at an own `__proto__` key, parsed (zod leaves its own `__proto__` keys out in turn). */
function parsedValue(raw: unknown, at: At, what: string): unknown {
  const parsed = JsonValue.safeParse(raw);
  if (parsed.success) return parsed.data;
  const path = pathOf(at);
  const issues = parsed.error.issues.map((i) => ({
    path: [...path, ...i.path].map(String).join('.'),
    message: i.message,
  }));
  const first = issues[0] ?? { path: path.join('.'), message: 'is not JSON' };
  throw new TrajectoryStoreError('bad_request', `invalid ${what}: ${first.path} ${first.message}`, {
    issues,
  });
}

/**
 * Restores into `parsed` (what zod made of `input`) every own `__proto__` key `input` has where `parsed` has
 * none, walking both in step (a loop, not recursion: the depth is the input's); returns `parsed`. A value
 * there that is not JSON is `bad_request`, naming its path within `what`.
 */
export function keepProtoKeys<T>(input: unknown, parsed: T, what: string): T {
  const stack: [unknown, unknown, At][] = [[input, parsed, null]];
  while (stack.length > 0) {
    const [from, to, at] = stack.pop()!;
    if (Array.isArray(from) && Array.isArray(to)) {
      const n = Math.min(from.length, to.length);
      for (let i = 0; i < n; i++)
        if (from[i] !== null && typeof from[i] === 'object') stack.push([from[i], to[i], { key: i, up: at }]);
      continue;
    }
    if (!isRecord(from) || !isRecord(to) || from === to) continue;
    const own = Object.getOwnPropertyDescriptor(from, PROTO);
    if (own && 'value' in own && !Object.hasOwn(to, PROTO)) {
      const here = { key: PROTO, up: at };
      const value = parsedValue(own.value, here, what);
      Object.defineProperty(to, PROTO, { value, enumerable: true, writable: true, configurable: true });
      stack.push([own.value, value, here]);
    }
    for (const key of Object.keys(to)) {
      if (key === PROTO || !Object.hasOwn(from, key)) continue;
      const child = from[key];
      if (child !== null && typeof child === 'object') stack.push([child, to[key], { key, up: at }]);
    }
  }
  return parsed;
}
