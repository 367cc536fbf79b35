// Hex (lowercase, even length, no 0x — the spec's only form), u64 fields as JS numbers, and sizes.
import { HeadLogError } from './errors.js';

/** Lowercase hex, as the spec writes bytes in JSON. */
export type Hex = string;

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) NIBBLE[97 + i] = 10 + i;
const DIGITS = '0123456789abcdef';

export function bytesToHex(b: Uint8Array): Hex {
  let s = '';
  for (let i = 0; i < b.length; i++) s += DIGITS[b[i]! >> 4]! + DIGITS[b[i]! & 15]!;
  return s;
}

/** The bytes of lowercase even-length hex, or `undefined` for anything else. */
export function parseHex(s: unknown): Uint8Array | undefined {
  if (typeof s !== 'string' || s.length % 2 !== 0) return undefined;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) {
    const a = NIBBLE[s.charCodeAt(2 * i)] ?? -1;
    const b = NIBBLE[s.charCodeAt(2 * i + 1)] ?? -1;
    if ((a | b) < 0) return undefined;
    out[i] = (a << 4) | b;
  }
  return out;
}

/** A 32-byte hash given as 64 lowercase hex digits, or `undefined`. */
export function parseHash(s: unknown): Uint8Array | undefined {
  return typeof s === 'string' && s.length === 64 ? parseHex(s) : undefined;
}

export function isHashHex(s: unknown): s is Hex {
  return parseHash(s) !== undefined;
}

/** A tree size, index or u64 field this package holds as a number: a non-negative safe integer. */
export function isSize(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

export function requireSize(x: unknown, what: string): number {
  if (!isSize(x)) throw new HeadLogError('OutOfRange', `${what} is not a non-negative safe integer`);
  return x;
}

const TWO_32 = 2 ** 32;

/** Writes a u64 (big-endian) from a non-negative safe integer. */
export function writeU64(out: Uint8Array, at: number, v: number): void {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setUint32(at, Math.floor(v / TWO_32), false);
  view.setUint32(at + 4, v >>> 0, false);
}

/** Reads a big-endian u64; `undefined` above 2^53 − 1 (no value this package writes is that large). */
export function readU64(b: Uint8Array, at: number): number | undefined {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const v = view.getUint32(at, false) * TWO_32 + view.getUint32(at + 4, false);
  return Number.isSafeInteger(v) ? v : undefined;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

export function asciiBytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
