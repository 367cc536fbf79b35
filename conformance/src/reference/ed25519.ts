// Ed25519 for the reference, from Node's own crypto (OpenSSL) — deliberately not the library our
// implementation uses. OpenSSL alone is lenient (it accepts an identity key with an identity signature, and
// non-canonical point encodings), so RFC 8032 §5.1.7's strict reading is added here by hand: R and the
// public key must be canonical encodings (y < p; no "negative zero" x), S < L, and a small-order public key
// never verifies (the eight points of order dividing 8, canonically encoded, are listed below).
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { fromHex, toHex } from './bytes.js';

export const P = 2n ** 255n - 19n;
export const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const SPKI_PREFIX = fromHex('302a300506032b6570032100');
const PKCS8_PREFIX = fromHex('302e020100300506032b657004220420');

/** The canonical encodings of the eight points of order 1, 2, 4 and 8 (the torsion subgroup). */
export const SMALL_ORDER_KEYS: readonly string[] = [
  '0100000000000000000000000000000000000000000000000000000000000000', // identity
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // (0, -1): order 2
  '0000000000000000000000000000000000000000000000000000000000000000', // (√-1, 0): order 4
  '0000000000000000000000000000000000000000000000000000000000000080', // (-√-1, 0): order 4
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
];
const SMALL_ORDER = new Set(SMALL_ORDER_KEYS);

/** Little-endian bytes → integer. */
export function littleEndian(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i] ?? 0);
  return n;
}

/** Integer → 32 little-endian bytes, as hex. */
export function le32Hex(n: bigint): string {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return toHex(out);
}

/** RFC 8032 §5.1.3's decoding preconditions: y < p, and x = 0 (y = ±1) is never encoded with its sign bit set. */
function canonicalEncoding(point: Uint8Array): boolean {
  const y = littleEndian(point) & ((1n << 255n) - 1n);
  const signBit = ((point[31] ?? 0) >> 7) & 1;
  if (y >= P) return false;
  return !(signBit === 1 && (y === 1n || y === P - 1n));
}

/** Strict RFC 8032 verification; anything malformed is false. */
export function strictVerify(sigHex: string, message: Uint8Array, keyHex: string): boolean {
  if (!/^[0-9a-f]{128}$/.test(sigHex) || !/^[0-9a-f]{64}$/.test(keyHex)) return false;
  const sig = fromHex(sigHex);
  const key = fromHex(keyHex);
  if (!canonicalEncoding(key) || SMALL_ORDER.has(keyHex)) return false;
  if (!canonicalEncoding(sig.subarray(0, 32)) || littleEndian(sig.subarray(32)) >= L) return false;
  try {
    const spki = new Uint8Array([...SPKI_PREFIX, ...key]);
    return nodeVerify(
      null,
      message,
      createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }),
      sig,
    );
  } catch {
    return false;
  }
}

function privateKey(seed: Uint8Array) {
  const der = new Uint8Array([...PKCS8_PREFIX, ...seed]);
  return createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' });
}

/** The public key (hex) of a 32-byte RFC 8032 secret key. */
export function publicKeyOf(seed: Uint8Array): string {
  const spki = createPublicKey(privateKey(seed)).export({ format: 'der', type: 'spki' });
  return toHex(new Uint8Array(spki).subarray(SPKI_PREFIX.length));
}

/** An Ed25519 signature (hex) of `message` by the secret key `seed`. */
export function signWith(seed: Uint8Array, message: Uint8Array): string {
  return toHex(new Uint8Array(nodeSign(null, message, privateKey(seed))));
}
