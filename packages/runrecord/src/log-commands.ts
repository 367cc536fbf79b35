// The reader's half of the head log (issue 18 §4; spec/witnessed-heads.md "What a reader can prove"):
//   verify --log URL --run ID --tenant ID [--key APIKEY] [--log-key HEX] [--witness-key HEX]…
//          [--min-witnesses k] < wire.json
//   check-group [--witness-key HEX]… [--min-witnesses k] [--log-key HEX] < {"proof": …, "report": {…}}
// Each needs a trust anchor the log does not supply: a pinned `--log-key`, or k ≥ 1 named witnesses ("a
// reader trusts an STH that carries cosignatures from at least k witnesses it names"). Without one, the only
// key is the one the log serves about itself — a forged log would verify itself — so it is a usage error
// (exit 2). `verify --log` first verifies the record exactly as `verify` does; then it fetches the run's
// logged leaves (`GET /runs/:id/log`: proofs in one STH with its cosignatures), the log's key (unless
// `--log-key` pins it) and its latest STH, and checks, in this order: the STH is the log's (`BadSignature`),
// at least k named witnesses cosigned it (`InsufficientWitnesses`), the latest STH extends it or it extends
// the latest (`InconsistentLog`), every leaf is in it (`InclusionFailed` / `MalformedProof`), and the served
// record agrees with the leaves (`ForeignLeaf`, `ForkedRecord`, `TruncatedRecord`). A log that does not answer its wire contract is
// `LogUnavailable` — a network error before or during the body (a connection cut mid-read, the timeout), a
// non-2xx, a body larger than `MAX_LOG_ANSWER_BYTES`, one that is not the route's object. Every failure:
// exit 1, one line {"ok":false,"error":CODE}.
import {
  consistencyProofWire,
  cosignedTreeHeadFromWire,
  cosignedTreeHeadWire,
  countWitnesses,
  groupProofWire,
  type Hex,
  idHash,
  isHeadLogError,
  loggedLeavesFromWire,
  loggedLeavesWire,
  logKeyWire,
  parseHash,
  readAnswer,
  requireWitnesses,
  type SignedTreeHead,
  verifyConsistency,
  verifyGroupReport,
  verifyLoggedLeaves,
  verifyServedRecord,
  verifyTreeHead,
} from '@everdict/headlog';
import * as z from 'zod';
import { isAddr } from './bytes.js';
import { verifyOutput } from './summary.js';
import { verifyWire } from './verify.js';
import { decodeWire, parseJson } from './wire.js';

export class LogUsageError {
  constructor(readonly message: string) {}
}

class Failure {
  constructor(
    readonly code: string,
    readonly detail: string,
  ) {}
}

export interface CommandResult {
  readonly exitCode: 0 | 1;
  readonly output: Record<string, unknown>;
  readonly message?: string;
}

type Flags = Map<string, string[]>;

function flags(args: readonly string[], known: readonly string[]): Flags {
  const out: Flags = new Map();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const [flag, inline] = eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    if (!known.includes(flag!)) throw new LogUsageError(`unexpected argument ${a}`);
    const value = inline ?? args[++i];
    if (value === undefined) throw new LogUsageError(`${flag} needs a value`);
    out.set(flag!, [...(out.get(flag!) ?? []), value]);
  }
  return out;
}

function single(f: Flags, name: string, required: boolean): string | undefined {
  const v = f.get(name);
  if (v && v.length > 1) throw new LogUsageError(`${name} given twice`);
  if (required && !v) throw new LogUsageError(`${name} is required`);
  return v?.[0];
}

function hexFlag(f: Flags, name: string): Hex[] {
  return (f.get(name) ?? []).map((v) => {
    const lower = v.toLowerCase();
    if (!isAddr(lower)) throw new LogUsageError(`${name} needs 64 hex digits`);
    return lower;
  });
}

/** `--witness-key`… and `--min-witnesses` (default: 1 when a witness is named, else 0). */
function witnessFlags(f: Flags): { keys: Hex[]; k: number } {
  const keys = [...new Set(hexFlag(f, '--witness-key'))];
  const raw = single(f, '--min-witnesses', false);
  const k = raw === undefined ? Math.min(1, keys.length) : Number(raw);
  if (raw !== undefined && !/^(0|[1-9][0-9]{0,3})$/.test(raw)) {
    throw new LogUsageError('--min-witnesses needs a non-negative integer');
  }
  if (k > keys.length) throw new LogUsageError(`--min-witnesses ${k} with ${keys.length} --witness-key`);
  return { keys, k };
}

/**
 * The log key the reader pins (`--log-key`), at most one; with none, k ≥ 1 witnesses must be required — else
 * nothing but the log vouches for the log (usage error).
 */
function trustAnchor(f: Flags, k: number): Hex | undefined {
  const logKey = hexFlag(f, '--log-key');
  if (logKey.length > 1) throw new LogUsageError('--log-key given twice');
  if (logKey[0] === undefined && k === 0)
    throw new LogUsageError(
      "needs a trusted --log-key HEX, or --witness-key HEX with --min-witnesses of at least 1: the log's own key proves nothing about the log",
    );
  return logKey[0];
}

/**
 * The largest answer read from the log (bytes). A run's leaves with their audit paths are legitimately
 * several MB for a long run (~2 KB a leaf), so the cap is generous; a larger body is refused — a declared
 * `content-length` above it without reading a byte, a streamed one by cancelling it once past the cap —
 * rather than holding whatever a hostile or broken log sends.
 */
export const MAX_LOG_ANSWER_BYTES = 64 * 1024 * 1024;

/** The body as text, at most `MAX_LOG_ANSWER_BYTES` (headlog's `readAnswer`: the stream is cancelled past the cap). */
async function boundedText(res: Response, path: string): Promise<string> {
  const text = await readAnswer(res, MAX_LOG_ANSWER_BYTES);
  if (text === undefined)
    throw new Failure('LogUnavailable', `${path}: the answer is larger than ${MAX_LOG_ANSWER_BYTES} bytes`);
  return text;
}

async function get<S extends z.ZodType>(schema: S, url: URL, apiKey?: string): Promise<z.output<S>> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(60_000),
    });
    // Reading the body can fail too (a connection cut mid-body, the timeout): the log did not answer.
    text = await boundedText(res, url.pathname);
  } catch (e) {
    if (e instanceof Failure) throw e;
    throw new Failure('LogUnavailable', `${url.pathname}: ${(e as Error).message}`);
  }
  if (!res.ok)
    throw new Failure('LogUnavailable', `${url.pathname}: HTTP ${res.status} ${text.slice(0, 200)}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Failure('LogUnavailable', `${url.pathname}: not JSON`);
  }
  const r = schema.safeParse(json);
  if (!r.success) throw new Failure('LogUnavailable', `${url.pathname}: not the wire contract's object`);
  return r.data;
}

/** Runs a check; a `HeadLogError` becomes a failure with its code. */
function check<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (isHeadLogError(e)) throw new Failure(e.code, e.detail);
    throw e;
  }
}

function fail(e: unknown): CommandResult {
  if (e instanceof Failure) return { exitCode: 1, output: { ok: false, error: e.code }, message: e.detail };
  throw e;
}

export const VERIFY_LOG_FLAGS = [
  '--log',
  '--run',
  '--tenant',
  '--key',
  '--witness-key',
  '--min-witnesses',
  '--log-key',
  '--expect-head',
  '--trust-key',
] as const;

/**
 * `verify --log …`: the record, then its logged leaves in a cosigned STH. The API key is `--key`, or
 * `env.EVERDICT_API_KEY` when the flag is absent (so a caller need not put it on a command line others can read).
 */
export async function verifyWithLog(
  args: readonly string[],
  stdin: string,
  env: Readonly<Record<string, string | undefined>> = {},
): Promise<CommandResult> {
  const f = flags(args, VERIFY_LOG_FLAGS);
  const base = single(f, '--log', true)!;
  const runId = single(f, '--run', true)!;
  const tenantId = single(f, '--tenant', true)!;
  const apiKey = single(f, '--key', false) ?? env.EVERDICT_API_KEY;
  if (!apiKey) throw new LogUsageError('--key is required (or EVERDICT_API_KEY)');
  const { keys, k } = witnessFlags(f);
  const pinned = trustAnchor(f, k);
  const expectHead = hexFlag(f, '--expect-head');
  if (expectHead.length > 1) throw new LogUsageError('--expect-head given twice');
  const trustKeys = f.has('--trust-key') ? hexFlag(f, '--trust-key') : undefined;
  let root: URL;
  try {
    root = new URL(base.endsWith('/') ? base : `${base}/`);
  } catch {
    throw new LogUsageError(`--log ${base} is not a URL`);
  }

  let json: unknown;
  try {
    json = parseJson(stdin);
  } catch {
    return { exitCode: 1, output: { ok: false, error: 'MalformedRecord' } };
  }
  const r = verifyWire(json, {
    ...(expectHead[0] === undefined ? {} : { expectHead: expectHead[0] }),
    ...(trustKeys ? { trustKeys } : {}),
  });
  if (!r.ok) return { exitCode: 1, output: verifyOutput(r), message: r.message };
  const segments = decodeWire(json).segments;

  try {
    const served = await get(
      loggedLeavesWire,
      new URL(`runs/${encodeURIComponent(runId)}/log`, root),
      apiKey,
    );
    // A pinned key is the log's; else the served one, which the witnesses' cosignatures bind (via log_id).
    const key = pinned ?? (await get(logKeyWire, new URL('log/key', root))).public_key;
    const latestWire = await get(cosignedTreeHeadWire, new URL('log/sth', root));
    const logKey = parseHash(key)!;
    const { sth, cosignatures } = check(() => cosignedTreeHeadFromWire(served.sth));
    const latest = check(() => cosignedTreeHeadFromWire(latestWire).sth);
    check(() => verifyTreeHead(sth, logKey));
    check(() => verifyTreeHead(latest, logKey));
    check(() => requireWitnesses(sth, cosignatures, keys, k));
    await consistent(root, sth, latest);
    const leaves = check(() => verifyLoggedLeaves(sth, loggedLeavesFromWire(served.leaves)));
    check(() =>
      verifyServedRecord({ tenantId, runId }, leaves, {
        length: r.length,
        head: r.head,
        headAt: (length) => segments[length - 1]?.head,
      }),
    );
    return {
      exitCode: 0,
      output: {
        ...verifyOutput(r),
        log: {
          tree_size: String(sth.treeSize),
          root: sth.root,
          leaves: leaves.length,
          witnesses: countWitnesses(sth, cosignatures, keys),
        },
      },
    };
  } catch (e) {
    return fail(e);
  }
}

/** The STH the run was proven in and the log's latest are one history (a proof between them verifies). */
async function consistent(root: URL, a: SignedTreeHead, b: SignedTreeHead): Promise<void> {
  const [older, newer] = a.treeSize <= b.treeSize ? [a, b] : [b, a];
  if (older.treeSize === newer.treeSize) {
    if (older.root !== newer.root)
      throw new Failure('InconsistentLog', `two roots for tree size ${older.treeSize}`);
    return;
  }
  const p = await get(
    consistencyProofWire,
    new URL(`log/proof/consistency?from=${older.treeSize}&to=${newer.treeSize}`, root),
  );
  check(() =>
    verifyConsistency(
      older.treeSize,
      newer.treeSize,
      parseHash(older.root)!,
      parseHash(newer.root)!,
      p.proof,
    ),
  );
}

const checkGroupInput = z.strictObject({
  proof: groupProofWire,
  report: z.strictObject({ groupId: z.string(), runs: z.array(z.string()) }),
});

/** `check-group`: every run the log holds for the group (in one cosigned STH) is in the report. */
export function checkGroup(args: readonly string[], stdin: string): CommandResult {
  const f = flags(args, ['--witness-key', '--min-witnesses', '--log-key']);
  const { keys, k } = witnessFlags(f);
  const logKey = trustAnchor(f, k);
  let input: z.output<typeof checkGroupInput>;
  try {
    const r = checkGroupInput.safeParse(JSON.parse(stdin));
    if (!r.success) throw new Error('shape');
    input = r.data;
  } catch {
    return { exitCode: 1, output: { ok: false, error: 'MalformedProof' } };
  }
  try {
    const { proof, report } = input;
    const { sth, cosignatures } = check(() => cosignedTreeHeadFromWire(proof.sth));
    if (logKey !== undefined) check(() => verifyTreeHead(sth, parseHash(logKey)!));
    check(() => requireWitnesses(sth, cosignatures, keys, k));
    if (proof.group_hash !== check(() => idHash(report.groupId))) {
      throw new Failure('ForeignLeaf', 'the proof is for another group');
    }
    const leaves = check(() => verifyLoggedLeaves(sth, loggedLeavesFromWire(proof.leaves)));
    const { unlogged } = check(() => verifyGroupReport(leaves, report));
    const runs = new Set(leaves.map((l) => l.leaf.runHash)).size;
    return {
      exitCode: 0,
      output: { ok: true, tree_size: String(sth.treeSize), logged_runs: runs, unlogged },
    };
  } catch (e) {
    return fail(e);
  }
}
