// The three commands of the head log's command-line contract, as the reference reads the spec's
// "Precise readings": inputs exactly the objects shown (else MalformedProof, exit 1); whatever is decidable
// without hashing is MalformedProof and comes first; then hash mismatches. Unknown subcommand: exit 2.
import { fromHex, toHex } from './bytes.js';
import {
  LEAF_BYTES,
  LEAF_TAG,
  type LogDefects,
  LogHasher,
  mth,
  pathLength,
  proofLength,
  rootFromPath,
  rootsFromProof,
} from './log-tree.js';

export const LOG_SUBCOMMANDS = ['log-root', 'log-verify-inclusion', 'log-verify-consistency'] as const;
export type LogSubcommand = (typeof LOG_SUBCOMMANDS)[number];

export interface LogAnswer {
  readonly exitCode: 0 | 1 | 2;
  readonly output?: unknown;
}

class Malformed {}

const TAG_HEX = toHex(new TextEncoder().encode(LEAF_TAG));

function object(input: unknown, keys: readonly string[], defects: LogDefects): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new Malformed();
  const o = input as Record<string, unknown>;
  for (const k of keys) if (!Object.hasOwn(o, k)) throw new Malformed();
  if (!defects.lenientFields && Object.keys(o).some((k) => !keys.includes(k))) throw new Malformed();
  return o;
}

function size(x: unknown): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) throw new Malformed();
  return x;
}

function hash(x: unknown): Uint8Array {
  if (typeof x !== 'string' || !/^[0-9a-f]{64}$/.test(x)) throw new Malformed();
  return fromHex(x);
}

function hashes(x: unknown): Uint8Array[] {
  if (!Array.isArray(x)) throw new Malformed();
  return x.map(hash);
}

function leaf(x: unknown): Uint8Array {
  if (
    typeof x !== 'string' ||
    x.length !== 2 * LEAF_BYTES ||
    !/^[0-9a-f]*$/.test(x) ||
    !x.startsWith(TAG_HEX)
  )
    throw new Malformed();
  return fromHex(x);
}

const same = (a: Uint8Array, b: Uint8Array) => toHex(a) === toHex(b);
const ok: LogAnswer = { exitCode: 0, output: { ok: true } };
const fail = (error: string): LogAnswer => ({ exitCode: 1, output: { ok: false, error } });

function logRoot(input: unknown, d: LogDefects): LogAnswer {
  const hasher = new LogHasher(d);
  const o = object(input, ['leaves'], d);
  if (!Array.isArray(o.leaves)) throw new Malformed();
  const leaves = o.leaves.map(leaf);
  const root = mth(
    hasher,
    leaves.map((l) => hasher.leaf(l)),
  );
  const n = leaves.length;
  return { exitCode: 0, output: { tree_size: d.sizeAsNumber ? n : String(n), root: toHex(root) } };
}

function verifyInclusion(input: unknown, d: LogDefects): LogAnswer {
  const hasher = new LogHasher(d);
  const o = object(input, ['leaf', 'index', 'tree_size', 'root', 'path'], d);
  const [l, m, n, root, elements] = [
    leaf(o.leaf),
    size(o.index),
    size(o.tree_size),
    hash(o.root),
    hashes(o.path),
  ];
  if (m >= n && !d.indexBeyondSize) throw new Malformed();
  if (elements.length !== pathLength(m, n)) {
    if (d.shapeAsMismatch) return fail('InclusionFailed');
    throw new Malformed();
  }
  return same(rootFromPath(hasher, m, n, hasher.leaf(l), elements), root) ? ok : fail('InclusionFailed');
}

function verifyConsistency(input: unknown, d: LogDefects): LogAnswer {
  const hasher = new LogHasher(d);
  const o = object(input, ['old_size', 'old_root', 'new_size', 'new_root', 'proof'], d);
  const [m, oldRoot, n, newRoot, elements] = [
    size(o.old_size),
    hash(o.old_root),
    size(o.new_size),
    hash(o.new_root),
    hashes(o.proof),
  ];
  if (m > n) throw new Malformed();
  if (elements.length !== proofLength(m, n, d)) {
    if (d.shapeAsMismatch) return fail('InconsistentLog');
    throw new Malformed();
  }
  if (m === n) return same(oldRoot, newRoot) ? ok : fail('InconsistentLog');
  if (m === 0) return same(oldRoot, hasher.empty()) ? ok : fail('InconsistentLog');
  const got = rootsFromProof(hasher, m, n, true, oldRoot, elements);
  return same(got.old, oldRoot) && same(got.new, newRoot) ? ok : fail('InconsistentLog');
}

export function isLogSubcommand(s: string): s is LogSubcommand {
  return (LOG_SUBCOMMANDS as readonly string[]).includes(s);
}

/** Runs `<subcommand>` on its standard input's text. A subcommand the contract does not name: exit 2. */
export function referenceLog(subcommand: string, stdin: string, defects: LogDefects = {}): LogAnswer {
  if (!isLogSubcommand(subcommand)) return { exitCode: 2 };
  try {
    const input: unknown = JSON.parse(stdin);
    if (subcommand === 'log-root') return logRoot(input, defects);
    if (subcommand === 'log-verify-inclusion') return verifyInclusion(input, defects);
    return verifyConsistency(input, defects);
  } catch (e) {
    if (e instanceof Malformed || e instanceof SyntaxError) return fail('MalformedProof');
    throw e;
  }
}
