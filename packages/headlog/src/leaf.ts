// Leaves (`witnessed-heads.md` § Leaves): one per committed segment, 162 bytes.
//   "everdict.headlog/1" ‖ tenant_hash ‖ run_hash ‖ group_hash | 32 × 0x00 ‖ u64 length ‖ head ‖ u64 logged_ms
import { asciiBytes, bytesToHex, type Hex, isSize, parseHash, readU64, writeU64 } from './bytes.js';
import { HASH_SIZE, LEAF_SIZE, LEAF_TAG } from './constants.js';
import { HeadLogError } from './errors.js';
import { blake3 } from './hash.js';

/** A decoded leaf. Ids appear only hashed: tenants, runs and groups are not named in the log. */
export interface HeadLeaf {
  /** H(tenant id, UTF-8) */
  readonly tenantHash: Hex;
  /** H(run id, UTF-8) */
  readonly runHash: Hex;
  /** H(group id) when the run belongs to a group, else `null` (32 zero bytes on the wire). */
  readonly groupHash: Hex | null;
  /** The record's length after this segment. */
  readonly length: number;
  /** The record's head after this segment. */
  readonly head: Hex;
  /** When the log accepted the leaf (Unix epoch ms). */
  readonly loggedMs: number;
}

/** What the control plane knows when a segment commits. */
export interface SegmentHead {
  readonly tenantId: string;
  readonly runId: string;
  readonly groupId?: string | null | undefined;
  readonly length: number;
  readonly head: Hex;
  readonly loggedMs: number;
}

const TAG = asciiBytes(LEAF_TAG);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const utf8 = new TextEncoder();
const OFF = { tenant: 18, run: 50, group: 82, length: 114, head: 122, loggedMs: 154 } as const;

const malformed = (why: string) => new HeadLogError('MalformedLeaf', why);

/** `H(id, UTF-8)`: how a tenant, run or group id appears in a leaf. */
export function idHash(id: string): Hex {
  if (typeof id !== 'string' || LONE_SURROGATE.test(id)) throw malformed('an id is not a well-formed string');
  return bytesToHex(blake3(utf8.encode(id)));
}

/** The leaf for a committed segment, from the ids the control plane holds. */
export function leafFor(s: SegmentHead): HeadLeaf {
  return {
    tenantHash: idHash(s.tenantId),
    runHash: idHash(s.runId),
    groupHash: s.groupId === undefined || s.groupId === null ? null : idHash(s.groupId),
    length: s.length,
    head: s.head,
    loggedMs: s.loggedMs,
  };
}

function putHash(out: Uint8Array, at: number, hex: unknown, what: string): void {
  const b = parseHash(hex);
  if (!b) throw malformed(`${what} is not 64 lowercase hex digits`);
  out.set(b, at);
}

/** The leaf's 162 bytes. Throws `MalformedLeaf` if a field cannot be encoded. */
export function encodeLeaf(leaf: HeadLeaf): Uint8Array {
  const out = new Uint8Array(LEAF_SIZE);
  out.set(TAG, 0);
  putHash(out, OFF.tenant, leaf.tenantHash, 'tenantHash');
  putHash(out, OFF.run, leaf.runHash, 'runHash');
  if (leaf.groupHash !== null) putHash(out, OFF.group, leaf.groupHash, 'groupHash');
  if (!isSize(leaf.length)) throw malformed('length is not a non-negative safe integer');
  writeU64(out, OFF.length, leaf.length);
  putHash(out, OFF.head, leaf.head, 'head');
  if (!isSize(leaf.loggedMs)) throw malformed('loggedMs is not a non-negative safe integer');
  writeU64(out, OFF.loggedMs, leaf.loggedMs);
  return out;
}

/** Exactly 162 bytes starting with the tag: what the CLI contract calls a leaf. */
export function isLeafBytes(b: Uint8Array): boolean {
  if (b.length !== LEAF_SIZE) return false;
  for (let i = 0; i < TAG.length; i++) if (b[i] !== TAG[i]) return false;
  return true;
}

function isZero(b: Uint8Array, at: number): boolean {
  for (let i = at; i < at + HASH_SIZE; i++) if (b[i] !== 0) return false;
  return true;
}

/** Decodes a leaf. Throws `MalformedLeaf` for another size or tag, or a u64 field above 2^53 − 1. */
export function decodeLeaf(b: Uint8Array): HeadLeaf {
  if (!isLeafBytes(b)) throw malformed(`not ${LEAF_SIZE} bytes starting with "${LEAF_TAG}"`);
  const length = readU64(b, OFF.length);
  const loggedMs = readU64(b, OFF.loggedMs);
  if (length === undefined || loggedMs === undefined) throw malformed('a u64 field is above 2^53 - 1');
  const hex = (at: number) => bytesToHex(b.subarray(at, at + HASH_SIZE));
  return {
    tenantHash: hex(OFF.tenant),
    runHash: hex(OFF.run),
    groupHash: isZero(b, OFF.group) ? null : hex(OFF.group),
    length,
    head: hex(OFF.head),
    loggedMs,
  };
}
