// Primitive encoders of the spec (u8, u32, u64, i32, str, addr) and the hex form of an address.
import { RunRecordError } from './errors.js';

/** A content address in its public form: 64 lowercase hex characters (32 bytes of BLAKE3-256). */
export type Hex = string;

export const U64_MAX = (1n << 64n) - 1n;
const ADDR_RE = /^[0-9a-f]{64}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) NIBBLE[97 + i] = 10 + i;
// Hex encoding writes char codes into a scratch buffer and decodes it once (TextDecoder is native and
// ~4× faster than concatenating 32 two-char strings, which also leaves a rope to flatten later).
const HEX_HI = new Uint8Array(256);
const HEX_LO = new Uint8Array(256);
const DIGITS = '0123456789abcdef';
for (let i = 0; i < 256; i++) {
  HEX_HI[i] = DIGITS.charCodeAt(i >> 4);
  HEX_LO[i] = DIGITS.charCodeAt(i & 15);
}
const HEX_SCRATCH = new Uint8Array(64);
const ascii = new TextDecoder('latin1');

export function isAddr(x: unknown): x is Hex {
  return typeof x === 'string' && ADDR_RE.test(x);
}

export function isU64(x: unknown): x is bigint {
  return typeof x === 'bigint' && x >= 0n && x <= U64_MAX;
}

/** A string whose UTF-8 encoding is exact (no lone surrogates, which would encode as U+FFFD). */
export function isWellFormedString(x: unknown): x is string {
  return typeof x === 'string' && !LONE_SURROGATE.test(x);
}

/** Canonical decimal (no sign, no leading zeros) within u64. */
export function parseU64Decimal(s: string): bigint | undefined {
  if (!/^(0|[1-9][0-9]{0,19})$/.test(s)) return undefined;
  const v = BigInt(s);
  return v <= U64_MAX ? v : undefined;
}

export function bytesToHex(b: Uint8Array): Hex {
  const out = b.length <= 32 ? HEX_SCRATCH : new Uint8Array(b.length * 2);
  for (let i = 0; i < b.length; i++) {
    const v = b[i]!;
    out[2 * i] = HEX_HI[v]!;
    out[2 * i + 1] = HEX_LO[v]!;
  }
  return ascii.decode(b.length === 32 ? out : out.subarray(0, b.length * 2));
}

export function hexToBytes(hex: string): Uint8Array {
  if (hex.length % 2 !== 0) throw new RunRecordError('MalformedRecord', 'hex of odd length');
  const out = new Uint8Array(hex.length / 2);
  if (!decodeHexInto(hex, out, 0, out.length))
    throw new RunRecordError('MalformedRecord', 'not lowercase hex');
  return out;
}

function decodeHexInto(s: string, out: Uint8Array, off: number, n: number): boolean {
  for (let i = 0; i < n; i++) {
    const a = NIBBLE[s.charCodeAt(2 * i)] ?? -1;
    const b = NIBBLE[s.charCodeAt(2 * i + 1)] ?? -1;
    if ((a | b) < 0) return false;
    out[off + i] = (a << 4) | b;
  }
  return true;
}

/** Compares a digest with a recorded hex head without allocating: 1 equal, 0 different, -1 not an address. */
export function compareDigestHex(digest: Uint8Array, s: unknown): 1 | 0 | -1 {
  if (typeof s !== 'string' || s.length !== 64) return -1;
  let diff = 0;
  for (let i = 0; i < 32; i++) {
    const a = NIBBLE[s.charCodeAt(2 * i)] ?? -1;
    const b = NIBBLE[s.charCodeAt(2 * i + 1)] ?? -1;
    if ((a | b) < 0) return -1;
    diff |= ((a << 4) | b) ^ digest[i]!;
  }
  return diff === 0 ? 1 : 0;
}

const utf8 = new TextEncoder();

/** A growable buffer the canonical encodings are written into; reused across segments. */
export class ByteWriter {
  buf: Uint8Array;
  private view: DataView;
  pos = 0;

  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v, false);
    this.pos += 4;
  }

  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v, false);
    this.pos += 4;
  }

  /** Caller guarantees 0 ≤ v ≤ U64_MAX. */
  u64(v: bigint): void {
    this.ensure(8);
    this.view.setBigUint64(this.pos, v, false);
    this.pos += 8;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** `u32 byte length ‖ UTF-8`. Caller guarantees a well-formed string. */
  str(s: string): void {
    this.ensure(4 + s.length * 3);
    if (s.length <= 64) {
      // ASCII fast path (call ids are short): one byte per char, no TextEncoder call.
      let i = 0;
      const start = this.pos + 4;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        this.buf[start + i] = c;
      }
      if (i === s.length) {
        this.view.setUint32(this.pos, i, false);
        this.pos = start + i;
        return;
      }
    }
    const { written } = utf8.encodeInto(s, this.buf.subarray(this.pos + 4));
    this.view.setUint32(this.pos, written, false);
    this.pos += 4 + written;
  }

  /** Writes an address given as hex; returns false (writing nothing useful) if it is not one. */
  addr(hex: unknown): boolean {
    if (typeof hex !== 'string' || hex.length !== 64) return false;
    this.ensure(32);
    if (!decodeHexInto(hex, this.buf, this.pos, 32)) return false;
    this.pos += 32;
    return true;
  }

  /** A copy of what has been written. */
  take(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

export function asciiBytes(s: string): Uint8Array {
  return utf8.encode(s);
}
