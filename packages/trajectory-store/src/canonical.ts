// Canonical JSON and canonical JSONL — the bytes a sealed trajectory's digest is computed over.
//
// canonical(v):
//   null, true, false  → their literals
//   number             → finite only; ECMAScript Number::toString as JSON.stringify writes it (-0 → 0)
//   string             → JSON.stringify(s): `"` `\` and U+0000–U+001F escaped (\b \f \n \r \t, else \u00xx),
//                        every other code point written as itself in UTF-8 (lone surrogates as \udxxx)
//   array              → `[` canonical(items) joined by `,` `]`
//   object             → `{` `"key":canonical(value)` joined by `,` `}`, keys ascending by UTF-16 code units,
//                        members whose value is `undefined` left out
//   no whitespace anywhere outside strings.
// For every value a TraceEvent admits this is RFC 8785 (JCS) output.
// canonical JSONL = canonical(event) + "\n" for each event in order (the last line ends with "\n" too),
// encoded as UTF-8; the empty trajectory is zero bytes.
import { TrajectoryStoreError } from './errors.js';

// Key lists repeat (every event of a kind has the same keys): their sorted order and their quoted forms
// are cached, bounded, so serializing costs little more than JSON.stringify.
const MAX_CACHED = 4096;
const sortedByShape = new Map<string, string[]>();
const quotedKeys = new Map<string, string>();

function sortedKeys(record: object): string[] {
  const keys = Object.keys(record);
  if (keys.length < 2) return keys;
  const shape = keys.join('\u0000');
  const cached = sortedByShape.get(shape);
  // A key may itself hold U+0000, so a joined shape can collide: use the cache only if its keys are these.
  if (cached && cached.length === keys.length && cached.every((k) => Object.hasOwn(record, k))) return cached;
  keys.sort();
  if (sortedByShape.size < MAX_CACHED) sortedByShape.set(shape, keys);
  return keys;
}

function quoted(key: string): string {
  let q = quotedKeys.get(key);
  if (q === undefined) {
    q = JSON.stringify(key);
    if (quotedKeys.size < MAX_CACHED) quotedKeys.set(key, q);
  }
  return q;
}

export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw notJson('a non-finite number');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ',';
          const item = value[i];
          out += item === undefined ? 'null' : canonicalJson(item);
        }
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = sortedKeys(record);
      let out = '{';
      let first = true;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const member = record[key];
        if (member === undefined) continue;
        out += `${first ? '' : ','}${quoted(key)}:${canonicalJson(member)}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      throw notJson(`a ${typeof value}`);
  }
}

/** One canonical JSONL line (with its terminating newline). */
export function canonicalLine(value: unknown): string {
  return `${canonicalJson(value)}\n`;
}

/** The canonical JSONL of a sequence of values. */
export function canonicalJsonl(values: Iterable<unknown>): string {
  let out = '';
  for (const v of values) out += canonicalLine(v);
  return out;
}

function notJson(what: string): TrajectoryStoreError {
  return new TrajectoryStoreError('bad_request', `canonical JSON cannot hold ${what}`);
}
