// Canonical JSON — the one encoding every digest and address over a JSON value is computed from (a sealed
// trajectory's digest, a run's unit and grant-set ids, an environment manifest). A function of the value
// alone: a value read back from a JSON column (PostgreSQL's jsonb reorders keys) encodes to the same bytes.
//
// canonical(v):
//   null, true, false  → their literals
//   number             → finite only; ECMAScript Number::toString as JSON.stringify writes it (-0 → 0)
//   string             → JSON.stringify(s): `"` `\` and U+0000–U+001F escaped (\b \f \n \r \t, else \u00xx),
//                        every other code point written as itself in UTF-8 (lone surrogates as \udxxx)
//   array              → `[` canonical(items) joined by `,` `]` (an undefined item as null, as JSON.stringify)
//   object             → `{` `"key":canonical(value)` joined by `,` `}`, own enumerable keys (an own `__proto__`
//                        included) ascending by UTF-16 code units, members whose value is `undefined` left out
//   no whitespace anywhere outside strings; a value with `toJSON` (a Date) as its toJSON(), as JSON.stringify.
// For every JSON value this is RFC 8785 (JCS) output.
// canonical JSONL = canonical(value) + "\n" for each value in order (the last line ends with "\n" too).
import { RunModelError } from './errors.js';

/** Keys ascending by UTF-16 code units (`<` on strings); insertion sort for the short lists most objects have. */
function sortedKeys(record: object): string[] {
  const keys = Object.keys(record);
  if (keys.length > 24) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** The canonical JSON text of `value`. Throws RunModelError `invalid_input` for what JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw notJson('a non-finite number');
      return `${value}`; // Number::toString, what JSON.stringify writes for a finite number (-0 → "0")
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
      // A value with toJSON (a Date) is written as what it stands for, as JSON.stringify writes it.
      if (typeof record.toJSON === 'function') return canonicalJson((record.toJSON as () => unknown)());
      const keys = sortedKeys(record);
      let out = '{';
      let first = true;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const member = record[key];
        if (member === undefined) continue;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(member)}`;
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

/** The canonical JSONL of a sequence of values (the empty sequence is the empty string). */
export function canonicalJsonl(values: Iterable<unknown>): string {
  let out = '';
  for (const v of values) out += canonicalLine(v);
  return out;
}

function notJson(what: string): RunModelError {
  return new RunModelError('invalid_input', `canonical JSON cannot hold ${what}`, { reason: 'not_json' });
}
