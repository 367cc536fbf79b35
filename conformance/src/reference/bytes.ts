// Primitives of spec/runrecord.md: addr, u8, u32, u64 (big-endian), str (u32 length ‖ UTF-8), H = BLAKE3-256.
import { blake3 } from '@noble/hashes/blake3.js';

export function H(bytes: Uint8Array): Uint8Array {
  return blake3(bytes);
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function fromHex(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, '');
  if (!/^([0-9a-fA-F]{2})*$/.test(clean)) throw new Error(`not hex: ${hex}`);
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** An address, from its 64-char hex form. */
export function addr(hex: string): Uint8Array {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not an address: ${hex}`);
  return fromHex(hex);
}

export function u8(n: number): Uint8Array {
  return Uint8Array.of(n);
}

export function u32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, false);
  return out;
}

export function u64(n: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, n, false);
  return out;
}

export function str(text: string): Uint8Array {
  const utf8 = new TextEncoder().encode(text);
  return concat(u32(utf8.length), utf8);
}

/** H of a UTF-8 label, as hex: how the vectors name their recognisable addresses (e.g. H("unit-a")). */
export function labelAddress(label: string): string {
  return toHex(H(ascii(label)));
}
