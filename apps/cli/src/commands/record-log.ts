// `everdict record verify <run> --log-key HEX | --witness-key HEX…`: the record proven in the control plane's
// head log as well — by the runrecord CLI's `verify --log` (the built `everdict-runrecord` of
// @everdict/runrecord, run as its own process: the reader's code, not this CLI's): the run's logged leaves in a
// signed tree head that the pinned log key signed (or K named witnesses cosigned), that head consistent with the
// log's latest, and the served record neither cut short nor forked against them. The API key goes to it in its
// environment (`EVERDICT_API_KEY`), never on its command line.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';

export interface LogOptions {
  logKey?: string;
  witnessKey?: string[];
  minWitnesses?: string;
}

/** Where the run's leaves were proven: the runrecord CLI's `log` verdict. */
export interface LogProof {
  tree_size: string;
  root: string;
  leaves: number;
  witnesses: number;
}

export type LogVerdict = { ok: true; log: LogProof } | { ok: false; error: string; message?: string };

/** How long a record whose last segments no signed tree head covers yet is tried again (STHs every ≈ 2 s). */
export const LOG_CATCH_UP_MS = 10_000;

export const wantsLog = (o: LogOptions): boolean => o.logKey !== undefined || (o.witnessKey?.length ?? 0) > 0;

/** The runrecord bin of the installed @everdict/runrecord (its package.json's `bin`). */
export function runrecordBin(): string {
  const manifest = createRequire(import.meta.url).resolve('@everdict/runrecord/package.json');
  const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin;
  return path.join(path.dirname(manifest), bin['everdict-runrecord']!);
}

/** Usage first: bad flags are exit 2 before any call. */
export function checkLogOptions(o: LogOptions): void {
  for (const k of [o.logKey, ...(o.witnessKey ?? [])])
    if (k !== undefined && !/^[0-9a-f]{64}$/.test(k))
      throw new CliError('usage', `--log-key/--witness-key ${k}: 64 hex digits`);
  if (o.minWitnesses !== undefined && !/^\d+$/.test(o.minWitnesses))
    throw new CliError('usage', '--min-witnesses is a whole number');
}

function verifyOnce(
  ctx: Context,
  args: string[],
  wire: string,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [runrecordBin(), ...args], {
      env: { ...process.env, EVERDICT_API_KEY: ctx.key ?? '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, out: Buffer.concat(out).toString('utf8'), err: Buffer.concat(err).toString('utf8') }),
    );
    child.stdin.end(wire);
  });
}

/**
 * The runrecord CLI's verdict on the record against the log, once the log covers the whole record. Its `verify
 * --log` proves the leaves a signed tree head holds and accepts a record longer than them (a run extended since
 * that tree head); a record none or only part of whose segments are in a signed tree head yet is not proven
 * whole, so it is asked again for LOG_CATCH_UP_MS (a run that settled a moment ago: STHs every ≈ 2 s), and then
 * answered `NotInLog` naming how many are covered. A refusal (`TruncatedRecord`, `BadSignature`, …) is final.
 */
export async function proveInLog(
  ctx: Context,
  run: { id: string; tenant: string },
  wire: unknown,
  o: LogOptions,
): Promise<LogVerdict> {
  const args = ['verify', '--log', ctx.url, '--run', run.id, '--tenant', run.tenant];
  if (o.logKey) args.push('--log-key', o.logKey);
  for (const w of o.witnessKey ?? []) args.push('--witness-key', w);
  if (o.minWitnesses !== undefined) args.push('--min-witnesses', o.minWitnesses);
  const text = JSON.stringify(wire);
  const until = Date.now() + LOG_CATCH_UP_MS;
  for (;;) {
    const r = await verifyOnce(ctx, args, text);
    if (r.code === 2) throw new CliError('usage', r.err.trim() || 'everdict-runrecord refused its arguments');
    let verdict: { ok?: boolean; error?: string; length?: number; log?: LogProof };
    try {
      verdict = JSON.parse(r.out.trim().split('\n').pop() ?? '') as typeof verdict;
    } catch {
      throw new CliError('unavailable', `everdict-runrecord answered no verdict: ${r.err.trim()}`);
    }
    if (r.code !== 0 || !verdict.ok || !verdict.log) {
      const message = r.err.trim().replace(/^does not verify: /, '');
      return { ok: false, error: verdict.error ?? 'unknown', ...(message ? { message } : {}) };
    }
    const segments = verdict.length ?? 0;
    if (verdict.log.leaves >= segments) return { ok: true, log: verdict.log };
    if (Date.now() >= until)
      return {
        ok: false,
        error: 'NotInLog',
        message: `the log's signed tree heads cover ${verdict.log.leaves} of its ${segments} segments after ${LOG_CATCH_UP_MS / 1000} s`,
      };
    await delay(500);
  }
}

export function describeLog(v: LogVerdict): string {
  if (!v.ok) return `  log       DOES NOT VERIFY ${v.error}${v.message ? `: ${v.message}` : ''}`;
  const w = v.log.witnesses;
  return `  log       in the head log: ${v.log.leaves} leaves in the signed tree of size ${v.log.tree_size} (root ${v.log.root.slice(0, 16)}…), ${w} witness${w === 1 ? '' : 'es'}`;
}
