// everdict record verify <run> — fetch the run's record in wire form (`GET /runs/:id/record?view=wire`) and
// verify it HERE with @everdict/runrecord, from genesis: nothing the server says about it is trusted. With
// --trust-key (repeatable) or --trust-listed (every key `GET /keys` lists), every interval must be bundled
// and signed by a trusted key. And the record must be THIS run's: its `unit_id` and `grants_id` are recomputed
// from the run as `GET /runs/:id` returns it (run-model's `unitDefinition` / `grantSet`, canonical JSON), so a
// server cannot answer with another run's valid record. With --log-key or --witness-key it is proven in the
// head log too (record-log.ts). Exit 1 when it does not verify, is not the run's, or is not in the log as served.
import { grantSet, type RecordBoundRun, unitDefinition } from '@everdict/run-model';
import { blake3, bytesToHex, verifyOutput, verifyWire } from '@everdict/runrecord';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { collect } from './options.js';
import {
  checkLogOptions,
  describeLog,
  type LogOptions,
  type LogVerdict,
  proveInLog,
  wantsLog,
} from './record-log.js';

interface KeyEntry {
  kind: string;
  name?: string;
  key: string;
  revokedAt?: string;
}

export interface VerifyReport {
  runId: string;
  ok: boolean;
  verdict: ReturnType<typeof verifyOutput>;
  signers: { key: string; kind: string; name?: string }[];
  /** Is the record this run's (its ids recomputed from the run)? False when the wire form names others, or none. */
  binds: boolean;
  /** With a log trust anchor (`--log-key`, `--witness-key`): the record proven in the head log, or why not. */
  log?: LogVerdict;
}

const utf8 = new TextEncoder();
const address = (text: string) => bytesToHex(blake3(utf8.encode(text)));

/** Whether `wire` opens at the run's own unit and grant set (its ids recomputed here, not read from the server). */
function bindsRun(wire: unknown, run: RecordBoundRun): boolean {
  const ids = wire as { unit_id?: unknown; grants_id?: unknown } | null;
  return ids?.unit_id === address(unitDefinition(run)) && ids?.grants_id === address(grantSet(run));
}

export async function verifyRun(
  ctx: Context,
  runId: string,
  o: { trustKey?: string[]; trustListed?: boolean } & LogOptions = {},
): Promise<VerifyReport> {
  // Usage first: a bad --trust-key is exit 2 whether or not the control plane answers.
  const trustKeys = [...(o.trustKey ?? [])];
  for (const k of trustKeys)
    if (!/^[0-9a-f]{64}$/.test(k)) throw new CliError('usage', `--trust-key ${k}: 64 hex digits`);
  checkLogOptions(o);
  const wire = await ctx.call<unknown>('GET', `/runs/${encodeURIComponent(runId)}/record?view=wire`);
  const run = await ctx.call<RecordBoundRun & { tenant: string }>(
    'GET',
    `/runs/${encodeURIComponent(runId)}`,
  );
  const keys = (await ctx.call<{ keys: KeyEntry[] }>('GET', '/keys')).keys;
  if (o.trustListed) for (const k of keys) if (!k.revokedAt) trustKeys.push(k.key);
  const result = verifyWire(wire, trustKeys.length > 0 ? { trustKeys } : {});
  const verdict = verifyOutput(result);
  const signers = result.ok
    ? result.signedBy.map((key) => {
        const known = keys.find((k) => k.key === key);
        return { key, kind: known?.kind ?? 'unknown', ...(known?.name ? { name: known.name } : {}) };
      })
    : [];
  const binds = bindsRun(wire, run);
  const ok = result.ok && binds;
  if (!ok || !wantsLog(o)) return { runId, ok, verdict, signers, binds };
  const log = await proveInLog(ctx, { id: runId, tenant: run.tenant }, wire, o);
  return { runId, ok: log.ok, verdict, signers, binds, log };
}

export function describeVerdict(r: VerifyReport): string[] {
  const v = r.verdict;
  if (!v.ok)
    return [`${r.runId}: DOES NOT VERIFY ${v.error}${v.index === undefined ? '' : ` at segment ${v.index}`}`];
  if (!r.binds)
    return [
      `${r.runId}: DOES NOT VERIFY as this run's record: its unit_id/grants_id are not the ones recomputed from the run (GET /runs/${r.runId}) — another run's record, or a run created before record ids were canonical JSON`,
    ];
  return [
    r.log && !r.log.ok ? `${r.runId}: its record verifies, but NOT in the head log` : `${r.runId}: verified`,
    `  binds     this run (unit_id, grants_id recomputed from its subject, placement, attach, envelope)`,
    `  head      ${v.head} (length ${v.length}, ${v.phase})`,
    `  account   ${v.account}`,
    `  energy    active ${v.cost.active_uj} µJ · idle ${v.cost.idle_uj} µJ · total ${v.cost.total_uj} µJ${v.cost.unresolved ? ` · ${v.cost.unresolved} unresolved` : ''}`,
    `  signed by ${r.signers.length === 0 ? '(no signatures)' : r.signers.map((s) => `${s.key.slice(0, 16)}… (${s.kind}${s.name ? ` ${s.name}` : ''})`).join(', ')}`,
    ...(r.log ? [describeLog(r.log)] : []),
  ];
}

export function registerRecord(program: Command, ctx: () => Context, done: Done): void {
  const record = program.command('record').description("a run's record");
  record
    .command('verify')
    .description('fetch the wire form and verify it locally with @everdict/runrecord')
    .argument('<run>', 'the run id')
    .option('--trust-key <hex>', 'require every interval signed by this Ed25519 key (repeatable)', collect)
    .option('--trust-listed', 'trust every unrevoked key GET /keys lists')
    .option(
      '--log-key <hex>',
      "prove it in the head log too, trusting this log key (GET /log/key's, pinned out of band)",
    )
    .option(
      '--witness-key <hex>',
      'prove it in the head log too, cosigned by this witness (repeatable)',
      collect,
    )
    .option('--min-witnesses <k>', 'witnesses named by --witness-key that must have cosigned (default 1)')
    .option('--json', "print the runrecord CLI's verdict JSON")
    .action((runId: string, o: { trustKey?: string[]; trustListed?: boolean; json?: boolean } & LogOptions) =>
      done(
        (async () => {
          const r = await verifyRun(ctx(), runId, o);
          if (o.json)
            line(
              ctx().io.stdout,
              JSON.stringify({
                ...r.verdict,
                signers: r.signers,
                binds: r.binds,
                ...(r.log ? { log: r.log } : {}),
              }),
            );
          else for (const l of describeVerdict(r)) line(ctx().io.stdout, l);
          if (!r.ok)
            throw new CliError(
              'not_verified',
              r.log && !r.log.ok
                ? `${runId}'s record is not proven in the head log (${r.log.error})`
                : `${runId}'s record does not verify`,
            );
          return 0;
        })(),
      ),
    );
}
