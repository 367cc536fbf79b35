#!/usr/bin/env node
// everdict-runrecord — the spec's command-line contract (build, verify) plus inspect, and the head log's
// contract (log-root, log-verify-inclusion, log-verify-consistency; spec/witnessed-heads.md), answered by
// @everdict/headlog.
//   exit 0: success; exit 1: a refusal or a failed verification (JSON on stdout); exit 2: usage (stderr).
// Input that is not JSON, or whose envelope does not parse, is MalformedRecord with no index (exit 1).
// Start cost: each command imports what it needs once its arguments are checked (`--help` and usage errors
// load no schema, hash or curve), and the build bundles zod, @noble/* and hash-wasm's BLAKE3 into the CLI
// (tsup.cli.config.ts) — a dozen files to load instead of ≈ 120 modules.
import { readFileSync } from 'node:fs';
import { isAddr } from './bytes.js';
import { isRunRecordError } from './errors.js';
import { decodeUtf8, parseJson } from './json.js';
import type { RunRecord } from './types.js';

const USAGE = `usage:
  everdict-runrecord build [--pretty] < ops.json        apply operations to a new record; print its wire form
  everdict-runrecord verify [--expect-head HEX] [--trust-key HEX]… < wire.json
                                                         verify from genesis; print a summary (cost, signers)
  everdict-runrecord inspect < wire.json                 print a record as a readable table
  everdict-runrecord log-root < {"leaves": [hex…]}        the head log's tree size and root
  everdict-runrecord log-verify-inclusion < proof.json   {"leaf","index","tree_size","root","path"}
  everdict-runrecord log-verify-consistency < proof.json {"old_size","old_root","new_size","new_root","proof"}
  everdict-runrecord verify --log URL --run ID --tenant ID [--key APIKEY] [--log-key HEX]
                     [--witness-key HEX]… [--min-witnesses K] [--expect-head HEX] [--trust-key HEX]… < wire.json
                                                         verify, then prove the record against the head log
  everdict-runrecord verify-audit [--key HEX] < chain.json  a runner key's audit chain (GET /runners/:id/audit) is unbroken
  everdict-runrecord check-group [--witness-key HEX]… [--min-witnesses K] [--log-key HEX]
                     < {"proof": GET /groups/:id/proof, "report": {"groupId","runs":[ids]}}
                                                         the report omits no logged run of the group
  verify --log and check-group need a trust anchor the log does not supply: --log-key, or K ≥ 1 (K defaults
  to 1 when a --witness-key is named); without one they refuse (exit 2)
exit codes: 0 ok · 1 refused / does not verify / malformed input · 2 usage, or standard input unreadable`;

class UsageError {
  constructor(readonly message: string) {}
}

/** Standard input that cannot be read at all (a directory, a closed descriptor): exit 2, no verdict. */
class InputError {
  constructor(readonly message: string) {}
}

/**
 * All of standard input as text. Bytes that are not UTF-8 are not JSON text (RFC 8259 §8.1), so they come
 * back as '' — input that is not JSON — never with U+FFFD standing in for them (two call ids that differ
 * in bytes must not build or verify as one). Input that cannot be read is not a record to pass judgement
 * on: InputError.
 */
function readStdin(): string {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(0);
  } catch (e) {
    throw new InputError(`cannot read standard input: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  return decodeUtf8(bytes) ?? '';
}

function out(value: unknown, pretty = false): void {
  process.stdout.write(`${JSON.stringify(value, null, pretty ? 2 : undefined)}\n`);
}

async function build(args: string[]): Promise<number> {
  const pretty = args.includes('--pretty');
  const rest = args.filter((a) => a !== '--pretty');
  if (rest.length > 0) throw new UsageError(`build: unexpected argument ${rest[0]}`);
  const { buildRecord } = await import('./ops.js');
  const r = buildRecord(readStdin());
  if (r.ok) {
    out(r.record.toWire(), pretty);
    return 0;
  }
  const refusal: Record<string, unknown> = { error: r.error };
  if (r.index !== undefined) Object.assign(refusal, { index: r.index, length: r.length, head: r.head });
  out(refusal);
  process.stderr.write(
    `refused: ${r.error}${r.index === undefined ? '' : ` at op ${r.index}`}: ${r.message}\n`,
  );
  return 1;
}

function verifyArgs(args: string[]): { expectHead?: string; trustKeys?: string[] } {
  let expectHead: string | undefined;
  let trustKeys: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    // `--flag=VALUE`: everything after the first '=' is the value (`--expect-head=HEX=x` is not HEX).
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const [flag, inline] = eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    if (flag !== '--expect-head' && flag !== '--trust-key')
      throw new UsageError(`verify: unexpected argument ${a}`);
    const value = (inline ?? args[++i])?.toLowerCase();
    if (value === undefined || !isAddr(value)) {
      throw new UsageError(`verify: ${flag} needs 64 hex digits`);
    }
    // One expected head: a second would be checked instead of the first, never as well as it.
    if (flag === '--expect-head' && expectHead !== undefined)
      throw new UsageError('verify: --expect-head given twice');
    if (flag === '--expect-head') expectHead = value;
    else trustKeys = [...(trustKeys ?? []), value];
  }
  return { ...(expectHead === undefined ? {} : { expectHead }), ...(trustKeys ? { trustKeys } : {}) };
}

async function verify(args: string[]): Promise<number> {
  const options = verifyArgs(args);
  const [{ verifyWire }, { verifyOutput }] = await Promise.all([
    import('./verify.js'),
    import('./summary.js'),
  ]);
  const text = readStdin();
  let json: unknown;
  try {
    json = parseJson(text);
  } catch (e) {
    if (!isRunRecordError(e)) throw e;
    out({ ok: false, error: 'MalformedRecord' });
    process.stderr.write(`does not verify: MalformedRecord: ${e.detail}\n`);
    return 1;
  }
  const r = verifyWire(json, options);
  out(verifyOutput(r));
  if (r.ok) return 0;
  process.stderr.write(
    `does not verify: ${r.error}${r.index === undefined ? '' : ` at ${r.index}`}: ${r.message}\n`,
  );
  return 1;
}

async function inspect(args: string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`inspect: unexpected argument ${args[0]}`);
  const [{ decodeWire }, { verifyWire }, { inspectRecord }] = await Promise.all([
    import('./wire.js'),
    import('./verify.js'),
    import('./inspect.js'),
  ]);
  try {
    const json = parseJson(readStdin());
    const result = verifyWire(json);
    process.stdout.write(inspectRecord(readable(json, decodeWire), result));
    return result.ok ? 0 : 1;
  } catch (e) {
    if (!isRunRecordError(e)) throw e;
    process.stderr.write(`cannot read the record: ${e.message}\n`);
    return 1;
  }
}

/** The record to draw: with its bundle if that decodes, else without it (the verdict says what is wrong). */
function readable(json: unknown, decodeWire: (json: unknown) => RunRecord): RunRecord {
  try {
    return decodeWire(json);
  } catch (e) {
    if (typeof json !== 'object' || json === null || !('attestations' in json)) throw e;
    const { attestations: _unreadable, ...bare } = json;
    return decodeWire(bare);
  }
}

/**
 * The head log's three commands: one JSON line; exit 0, or 1 with {"ok": false, "error": CODE}. The log
 * package is loaded only for these, so `build` and `verify` start no slower for it.
 */
async function logCommand(command: string, args: string[]): Promise<number> {
  const { isLogCommand, runLogCommand } = await import('@everdict/headlog');
  if (!isLogCommand(command)) throw new UsageError(`unknown command ${command}`);
  if (args.length > 0) throw new UsageError(`${command}: unexpected argument ${args[0]}`);
  const r = runLogCommand(command, readStdin());
  out(r.output);
  return r.exitCode;
}

/**
 * The head log's reader commands (`verify --log`, `check-group`; issue 18 §4), loaded only when one runs:
 * one JSON line; exit 0, or 1 with {"ok": false, "error": CODE}.
 */
async function readerCommand(command: 'verify' | 'check-group', args: string[]): Promise<number> {
  const { checkGroup, LogUsageError, verifyWithLog } = await import('./log-commands.js');
  try {
    const r =
      command === 'verify'
        ? await verifyWithLog(args, readStdin(), process.env)
        : checkGroup(args, readStdin());
    out(r.output);
    if (r.exitCode !== 0 && r.message !== undefined) process.stderr.write(`does not verify: ${r.message}\n`);
    return r.exitCode;
  } catch (e) {
    if (e instanceof LogUsageError) throw new UsageError(`${command}: ${e.message}`);
    throw e;
  }
}

/** `verify-audit [--key HEX] < chain.json`: a runner key's audit chain (GET /runners/:id/audit) is unbroken. */
async function verifyAudit(args: string[]): Promise<number> {
  const { verifyAuditChain } = await import('./audit-chain.js');
  let key: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--key' && args[i + 1] !== undefined && key === undefined) key = args[++i]!.toLowerCase();
    else throw new UsageError(`verify-audit: unexpected argument ${args[i]}`);
  }
  const text = readStdin();
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    out({ ok: false, error: 'MalformedRecord' });
    return 1;
  }
  const r = verifyAuditChain(json, key === undefined ? {} : { key });
  if (r.ok) {
    out({ ok: true, length: r.length, head: r.head, from: r.from });
    return 0;
  }
  out({ ok: false, error: r.error, ...(r.index === undefined ? {} : { index: r.index }) });
  process.stderr.write(`does not verify: ${r.message}\n`);
  return 1;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case 'build':
        return await build(args);
      case 'verify':
        if (args.some((a) => a === '--log' || a.startsWith('--log=')))
          return await readerCommand('verify', args);
        return await verify(args);
      case 'check-group':
        return await readerCommand(command, args);
      case 'verify-audit':
        return await verifyAudit(args);
      case 'inspect':
        return await inspect(args);
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        if (command?.startsWith('log-')) return await logCommand(command, args);
        throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`);
    }
  } catch (e) {
    if (e instanceof InputError) {
      process.stderr.write(`everdict-runrecord: ${e.message}\n`);
      return 2;
    }
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`everdict-runrecord: ${e.message}\n${USAGE}\n`);
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
