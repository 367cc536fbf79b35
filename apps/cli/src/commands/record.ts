// everdict record verify <run> — fetch the run's record in wire form (`GET /runs/:id/record?view=wire`) and
// verify it HERE with @everdict/runrecord, from genesis: nothing the server says about it is trusted. With
// --trust-key (repeatable) or --trust-listed (every key `GET /keys` lists), every interval must be bundled
// and signed by a trusted key. And the record must be THIS run's: its `unit_id` and `grants_id` are recomputed
// from the run as `GET /runs/:id` returns it (run-model's `unitDefinition` / `grantSet`, canonical JSON), so a
// server cannot answer with another run's valid record. Exit 1 when it does not verify or is not the run's.
import { grantSet, type RecordBoundRun, unitDefinition } from '@everdict/run-model';
import { blake3, bytesToHex, verifyOutput, verifyWire } from '@everdict/runrecord';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { collect } from './options.js';

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
  o: { trustKey?: string[]; trustListed?: boolean } = {},
): Promise<VerifyReport> {
  // Usage first: a bad --trust-key is exit 2 whether or not the control plane answers.
  const trustKeys = [...(o.trustKey ?? [])];
  for (const k of trustKeys)
    if (!/^[0-9a-f]{64}$/.test(k)) throw new CliError('usage', `--trust-key ${k}: 64 hex digits`);
  const wire = await ctx.call<unknown>('GET', `/runs/${encodeURIComponent(runId)}/record?view=wire`);
  const run = await ctx.call<RecordBoundRun>('GET', `/runs/${encodeURIComponent(runId)}`);
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
  return { runId, ok: result.ok && binds, verdict, signers, binds };
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
    `${r.runId}: verified`,
    `  binds     this run (unit_id, grants_id recomputed from its subject, placement, attach, envelope)`,
    `  head      ${v.head} (length ${v.length}, ${v.phase})`,
    `  account   ${v.account}`,
    `  energy    active ${v.cost.active_uj} µJ · idle ${v.cost.idle_uj} µJ · total ${v.cost.total_uj} µJ${v.cost.unresolved ? ` · ${v.cost.unresolved} unresolved` : ''}`,
    `  signed by ${r.signers.length === 0 ? '(no signatures)' : r.signers.map((s) => `${s.key.slice(0, 16)}… (${s.kind}${s.name ? ` ${s.name}` : ''})`).join(', ')}`,
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
    .option('--json', "print the runrecord CLI's verdict JSON")
    .action((runId: string, o: { trustKey?: string[]; trustListed?: boolean; json?: boolean }) =>
      done(
        (async () => {
          const r = await verifyRun(ctx(), runId, o);
          if (o.json)
            line(ctx().io.stdout, JSON.stringify({ ...r.verdict, signers: r.signers, binds: r.binds }));
          else for (const l of describeVerdict(r)) line(ctx().io.stdout, l);
          if (!r.ok) throw new CliError('not_verified', `${runId}'s record does not verify`);
          return 0;
        })(),
      ),
    );
}
