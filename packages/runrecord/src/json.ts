// Strict JSON text for the wire form, ops.json and the CLI's inputs. `JSON.parse` keeps the last of two
// members with the same name, silently; another reader may keep the first (or refuse), so one document
// would mean two records — a second `head`, a second body under one bundle address, a second `snapshot`.
// The spec's reader refuses what it cannot read exactly, so a duplicate member name is MalformedRecord
// (RFC 8259 §4: names SHOULD be unique; I-JSON, RFC 7493 §2.3: MUST). Names compare after unescaping
// ("a" and "\u0061" are the same name). Bytes are UTF-8 or they are not JSON text (RFC 8259 §8.1).
import { RunRecordError } from './errors.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** End of the string literal opening at `start` (index past its closing quote); `text` is valid JSON. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const q = text.indexOf('"', i);
    if (q < 0) return text.length; // not JSON (callers parse first): stop rather than loop
    let backslashes = 0;
    for (let j = q - 1; text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    i = q + 1;
  }
}

/** The one member whose value is a JSON number: "exit_code is a JSON integer in i32 range". */
const INTEGER_MEMBER = 'exit_code';

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

/**
 * After the colon of an `exit_code` member at `from`: if its value is a number written with a fraction or
 * an exponent, records its [start, end). Returns where scanning goes on.
 */
function integerEnd(text: string, from: number, fractional: [number, number][]): number {
  let i = from;
  while (isSpace(text.charCodeAt(i))) i++;
  const start = i;
  let integer = true;
  for (; i < text.length && isNumberChar(text.charCodeAt(i)); i++) {
    const d = text.charCodeAt(i);
    if (d === 0x2e || d === 0x65 || d === 0x45) integer = false;
  }
  if (!integer) fractional.push([start, i]);
  return i;
}

/** What a scan of a valid JSON text finds. */
export interface JsonScan {
  /** The first member name that appears twice in one object. */
  readonly duplicate?: string;
  /** [start, end) of each `exit_code` number written with a fraction or an exponent (`1.0`, `1e0`). */
  readonly fractional: readonly (readonly [number, number])[];
}

/** Scans a valid JSON text for duplicate member names and `exit_code` numbers that are not integer literals. */
export function scanJson(text: string): JsonScan {
  const objects: (Set<string> | null)[] = []; // null: an array
  const fractional: [number, number][] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const names = objects[objects.length - 1];
      if (names) {
        let j = end;
        while (isSpace(text.charCodeAt(j))) j++;
        if (text.charCodeAt(j) === COLON) {
          const raw = text.slice(i, end);
          const name = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
          if (names.has(name)) return { duplicate: name, fractional };
          names.add(name);
          if (name === INTEGER_MEMBER) {
            i = integerEnd(text, j + 1, fractional);
            continue;
          }
        }
      }
      i = end;
      continue;
    }
    if (c === 0x7b) objects.push(new Set());
    else if (c === 0x5b) objects.push(null);
    else if (c === 0x7d || c === 0x5d) objects.pop();
    i++;
  }
  return { fractional };
}

/** The first member name that appears twice in one object of a valid JSON text, or undefined. */
export function firstDuplicateName(text: string): string | undefined {
  return scanJson(text).duplicate;
}

/**
 * JSON text → value. Text that is not JSON, or has a member name twice in one object, is MalformedRecord
 * (no index). `exit_code` is "a JSON integer in i32 range": written with a fraction or an exponent
 * (`1.0`, `1e0`) it is a float to a reader that keeps the two apart, however whole its value, so it is read
 * as `null` and the body that holds it is refused where it stands (MalformedRecord at the op or segment to
 * blame), as a non-integer `exit_code` is.
 */
export function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RunRecordError('MalformedRecord', 'not JSON');
  }
  const { duplicate, fractional } = scanJson(text);
  if (duplicate !== undefined)
    throw new RunRecordError(
      'MalformedRecord',
      `member ${JSON.stringify(duplicate)} appears twice in one object`,
    );
  if (fractional.length === 0) return value;
  let rewritten = '';
  let from = 0;
  for (const [start, end] of fractional) {
    rewritten += `${text.slice(from, start)}null`;
    from = end;
  }
  return JSON.parse(rewritten + text.slice(from));
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Bytes → text, or undefined if they are not UTF-8 (never a U+FFFD stand-in: two different call ids must
 * not decode to one). A byte order mark is kept, so JSON.parse refuses it (RFC 8259 §8.1: MUST NOT add one).
 */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}
