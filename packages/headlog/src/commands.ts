// The spec's command-line contract (`witnessed-heads.md`), as a pure function from a subcommand and its
// standard input to an exit code and one JSON object, so that every CLI answers it the same way:
//   log-root                < {"leaves": [hex…]}                                  → {"tree_size", "root"}
//   log-verify-inclusion    < {"leaf", "index", "tree_size", "root", "path"}      → {"ok": true}
//   log-verify-consistency  < {"old_size", "old_root", "new_size", "new_root", "proof"} → {"ok": true}
// Failure: exit 1 and {"ok": false, "error": CODE}. Anything that is not exactly these objects is
// MalformedProof. A subcommand this contract does not name is the caller's to refuse (exit 2).
import * as z from 'zod';
import { bytesToHex, parseHash, parseHex } from './bytes.js';
import { isHeadLogError, isProofErrorCode, type ProofErrorCode } from './errors.js';
import { leafHash } from './hash.js';
import { isLeafBytes } from './leaf.js';
import { treeRoot } from './memory-tree.js';
import { verifyConsistency, verifyInclusion } from './verify.js';

export const LOG_COMMANDS = ['log-root', 'log-verify-inclusion', 'log-verify-consistency'] as const;
export type LogCommand = (typeof LOG_COMMANDS)[number];

export type LogCommandOutput =
  | { tree_size: string; root: string }
  | { ok: true }
  | { ok: false; error: ProofErrorCode };

export interface LogCommandResult {
  readonly exitCode: 0 | 1;
  readonly output: LogCommandOutput;
}

export function isLogCommand(name: string | undefined): name is LogCommand {
  return (LOG_COMMANDS as readonly (string | undefined)[]).includes(name);
}

const size = z.number().refine((n) => Number.isSafeInteger(n) && n >= 0);
const hash = z.string().transform((s, ctx) => {
  const b = parseHash(s);
  if (!b) {
    ctx.addIssue('not a 32-byte hash');
    return z.NEVER;
  }
  return b;
});
const leaf = z.string().transform((s, ctx) => {
  const b = parseHex(s);
  if (!b || !isLeafBytes(b)) {
    ctx.addIssue('not a leaf: 162 bytes starting with the tag');
    return z.NEVER;
  }
  return b;
});

export const logRootInput = z.strictObject({ leaves: z.array(leaf) });
export const inclusionInput = z.strictObject({
  leaf,
  index: size,
  tree_size: size,
  root: hash,
  path: z.array(hash),
});
export const consistencyInput = z.strictObject({
  old_size: size,
  old_root: hash,
  new_size: size,
  new_root: hash,
  proof: z.array(hash),
});

const failure = (error: ProofErrorCode): LogCommandResult => ({ exitCode: 1, output: { ok: false, error } });
const OK: LogCommandResult = { exitCode: 0, output: { ok: true } };

function parse<T>(schema: z.ZodType<T>, stdin: string): T | undefined {
  let json: unknown;
  try {
    json = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(json);
  return r.success ? r.data : undefined;
}

function guarded(check: () => void): LogCommandResult {
  try {
    check();
    return OK;
  } catch (e) {
    if (isHeadLogError(e) && isProofErrorCode(e.code)) return failure(e.code);
    throw e;
  }
}

/** Runs one of the three commands on its standard input's text. */
export function runLogCommand(command: LogCommand, stdin: string): LogCommandResult {
  switch (command) {
    case 'log-root': {
      const input = parse(logRootInput, stdin);
      if (!input) return failure('MalformedProof');
      return {
        exitCode: 0,
        output: { tree_size: String(input.leaves.length), root: bytesToHex(treeRoot(input.leaves)) },
      };
    }
    case 'log-verify-inclusion': {
      const input = parse(inclusionInput, stdin);
      if (!input) return failure('MalformedProof');
      return guarded(() =>
        verifyInclusion(leafHash(input.leaf), input.index, input.tree_size, input.root, input.path),
      );
    }
    case 'log-verify-consistency': {
      const input = parse(consistencyInput, stdin);
      if (!input) return failure('MalformedProof');
      return guarded(() =>
        verifyConsistency(input.old_size, input.new_size, input.old_root, input.new_root, input.proof),
      );
    }
  }
}

/** The `log-verify-inclusion` object for a leaf and its audit path (what a proof route answers). */
export function inclusionProofObject(p: {
  leaf: Uint8Array;
  index: number;
  treeSize: number;
  root: Uint8Array;
  path: readonly Uint8Array[];
}): z.input<typeof inclusionInput> {
  return {
    leaf: bytesToHex(p.leaf),
    index: p.index,
    tree_size: p.treeSize,
    root: bytesToHex(p.root),
    path: p.path.map(bytesToHex),
  };
}

/** The `log-verify-consistency` object for two tree heads and the proof between them. */
export function consistencyProofObject(p: {
  oldSize: number;
  oldRoot: Uint8Array;
  newSize: number;
  newRoot: Uint8Array;
  proof: readonly Uint8Array[];
}): z.input<typeof consistencyInput> {
  return {
    old_size: p.oldSize,
    old_root: bytesToHex(p.oldRoot),
    new_size: p.newSize,
    new_root: bytesToHex(p.newRoot),
    proof: p.proof.map(bytesToHex),
  };
}
