// Signed tree heads (`witnessed-heads.md` § Signed tree head) and witness cosignatures.
//   sth = "everdict.headlog.sth/1" ‖ u64 tree_size ‖ root ‖ u64 timestamp_ms ‖ log_id
//   signature = Ed25519(log key, sth);  log_id = H(log public key)
//   cosignature = Ed25519(witness key, "everdict.headlog.cosign/1" ‖ sth)
import * as z from 'zod';
import {
  asciiBytes,
  bytesToHex,
  equalBytes,
  type Hex,
  isSize,
  parseHash,
  parseHex,
  readU64,
  writeU64,
} from './bytes.js';
import { COSIGN_TAG, STH_TAG, TREE_HEAD_SIZE } from './constants.js';
import { HeadLogError } from './errors.js';
import { blake3 } from './hash.js';
import { sign, verifySignature } from './signing.js';

export interface TreeHead {
  readonly treeSize: number;
  readonly root: Hex;
  readonly timestampMs: number;
  /** H(log public key) */
  readonly logId: Hex;
}

export interface SignedTreeHead extends TreeHead {
  readonly signature: Hex;
}

/** The spec's JSON form. u64 fields are decimal strings. */
export interface SignedTreeHeadJson {
  tree_size: string;
  root: Hex;
  timestamp_ms: string;
  log_id: Hex;
  signature: Hex;
}

/** A witness's cosignature: its public key and its signature over the cosign tag and the STH bytes. */
export interface Cosignature {
  readonly witness: Hex;
  readonly signature: Hex;
}

const STH_TAG_BYTES = asciiBytes(STH_TAG);
const COSIGN_TAG_BYTES = asciiBytes(COSIGN_TAG);
const malformed = (why: string) => new HeadLogError('MalformedTreeHead', why);

/** `H(log public key)`: the log's id. */
export function logIdOf(publicKey: Uint8Array): Hex {
  if (publicKey.length !== 32) throw new HeadLogError('InvalidKey', 'an Ed25519 public key is 32 bytes');
  return bytesToHex(blake3(publicKey));
}

/** The 102 STH bytes that are signed. Throws `MalformedTreeHead` if a field cannot be encoded. */
export function encodeTreeHead(h: TreeHead): Uint8Array {
  const out = new Uint8Array(TREE_HEAD_SIZE);
  out.set(STH_TAG_BYTES, 0);
  if (!isSize(h.treeSize)) throw malformed('treeSize is not a non-negative safe integer');
  writeU64(out, 22, h.treeSize);
  const root = parseHash(h.root);
  if (!root) throw malformed('root is not 64 lowercase hex digits');
  out.set(root, 30);
  if (!isSize(h.timestampMs)) throw malformed('timestampMs is not a non-negative safe integer');
  writeU64(out, 62, h.timestampMs);
  const logId = parseHash(h.logId);
  if (!logId) throw malformed('logId is not 64 lowercase hex digits');
  out.set(logId, 70);
  return out;
}

export function decodeTreeHead(b: Uint8Array): TreeHead {
  if (b.length !== TREE_HEAD_SIZE || !equalBytes(b.subarray(0, 22), STH_TAG_BYTES)) {
    throw malformed(`not ${TREE_HEAD_SIZE} bytes starting with "${STH_TAG}"`);
  }
  const treeSize = readU64(b, 22);
  const timestampMs = readU64(b, 62);
  if (treeSize === undefined || timestampMs === undefined) throw malformed('a u64 field is above 2^53 - 1');
  return {
    treeSize,
    root: bytesToHex(b.subarray(30, 62)),
    timestampMs,
    logId: bytesToHex(b.subarray(70, 102)),
  };
}

/** Signs a tree head with the log key; `logId` is derived from the key. */
export function signTreeHead(
  head: Omit<TreeHead, 'logId'>,
  log: { secretKey: Uint8Array; publicKey: Uint8Array },
): SignedTreeHead {
  const full: TreeHead = { ...head, logId: logIdOf(log.publicKey) };
  return { ...full, signature: bytesToHex(sign(encodeTreeHead(full), log.secretKey)) };
}

/** The STH was signed by the log whose public key is given (its `log_id` included); else `BadSignature`. */
export function verifyTreeHead(sth: SignedTreeHead, logPublicKey: Uint8Array): void {
  if (sth.logId !== logIdOf(logPublicKey)) throw new HeadLogError('BadSignature', 'log_id is not H(log key)');
  const sig = parseHex(sth.signature);
  if (!sig || !verifySignature(sig, encodeTreeHead(sth), logPublicKey)) {
    throw new HeadLogError('BadSignature', 'the STH signature does not verify');
  }
}

function cosignMessage(sth: TreeHead): Uint8Array {
  const body = encodeTreeHead(sth);
  const out = new Uint8Array(COSIGN_TAG_BYTES.length + body.length);
  out.set(COSIGN_TAG_BYTES, 0);
  out.set(body, COSIGN_TAG_BYTES.length);
  return out;
}

/** A witness's cosignature over an STH (the caller has checked it: signature, size, consistency). */
export function cosignTreeHead(
  sth: TreeHead,
  witness: { secretKey: Uint8Array; publicKey: Uint8Array },
): Cosignature {
  return {
    witness: bytesToHex(witness.publicKey),
    signature: bytesToHex(sign(cosignMessage(sth), witness.secretKey)),
  };
}

/** The cosignature verifies (strict) under the key it names. */
export function verifyCosignature(sth: TreeHead, cosignature: Cosignature): boolean {
  const key = parseHash(cosignature.witness);
  const sig = parseHex(cosignature.signature);
  return !!key && !!sig && verifySignature(sig, cosignMessage(sth), key);
}

/** How many distinct trusted witnesses validly cosigned the STH (keys as hex). */
export function countWitnesses(
  sth: TreeHead,
  cosignatures: readonly Cosignature[],
  trusted: readonly Hex[],
): number {
  const trust = new Set(trusted);
  const counted = new Set<Hex>();
  for (const c of cosignatures) {
    if (trust.has(c.witness) && !counted.has(c.witness) && verifyCosignature(sth, c)) counted.add(c.witness);
  }
  return counted.size;
}

/** At least `k` of the named witnesses cosigned the STH; else `InsufficientWitnesses`. */
export function requireWitnesses(
  sth: TreeHead,
  cosignatures: readonly Cosignature[],
  trusted: readonly Hex[],
  k: number,
): void {
  const n = countWitnesses(sth, cosignatures, trusted);
  if (n < k) throw new HeadLogError('InsufficientWitnesses', `${n} of the ${k} witness cosignatures needed`);
}

const hash = z.string().regex(/^[0-9a-f]{64}$/);
const u64 = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,15})$/)
  .refine((s) => Number.isSafeInteger(Number(s)));
const sthJson = z.strictObject({
  tree_size: u64,
  root: hash,
  timestamp_ms: u64,
  log_id: hash,
  signature: z.string().regex(/^[0-9a-f]{128}$/),
});
export const cosignatureSchema = z.strictObject({
  witness: hash,
  signature: z.string().regex(/^[0-9a-f]{128}$/),
});

export function treeHeadToJson(sth: SignedTreeHead): SignedTreeHeadJson {
  encodeTreeHead(sth); // refuses what cannot be encoded
  return {
    tree_size: String(sth.treeSize),
    root: sth.root,
    timestamp_ms: String(sth.timestampMs),
    log_id: sth.logId,
    signature: sth.signature,
  };
}

/** Parses the JSON form exactly (no missing or unknown field). Throws `MalformedTreeHead`. */
export function parseTreeHeadJson(json: unknown): SignedTreeHead {
  const r = sthJson.safeParse(json);
  if (!r.success) throw malformed(`not an STH object: ${r.error.issues[0]?.message ?? 'invalid'}`);
  const j = r.data;
  return {
    treeSize: Number(j.tree_size),
    root: j.root,
    timestampMs: Number(j.timestamp_ms),
    logId: j.log_id,
    signature: j.signature,
  };
}
