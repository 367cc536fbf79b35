// everdict show <run> [--json] — one run as the control plane holds it (GET /runs/:id): what it ran, where it
// stands, why it failed, its scores (each with why it passed or failed: GET /runs/:id/scores), record and
// trajectory, then a command's or an eval's output tails.
import type { Command } from 'commander';
import { quote } from 'shell-quote';
import { z } from 'zod';
import type { Context, Done } from '../context.js';
import { documented } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';
import { printOutputTails } from './run.js';

/** The fields `show` prints; the rest of the run is in `--json`. Each is optional: absent ones are not shown. */
/** Artifacts `show` names one by one; past this, one line says how many more and how to get them. */
export const ARTIFACTS_SHOWN = 10;

const ShownRun = z.object({
  id: z.string(),
  kind: z.string(),
  status: z.string(),
  class: z.string().optional(),
  lifetime: z.string().optional(),
  attempt: z.number().optional(),
  subject: z.unknown().optional(),
  createdAt: z.string().optional(),
  startedAt: z.string().optional(),
  settledAt: z.string().optional(),
  expiresAt: z.string().optional(),
  causalDepth: z.number().optional(),
  origin: z.object({ causedByRunId: z.string().nullish() }).partial().optional(),
  group: z.object({ id: z.string(), role: z.string().optional() }).nullish(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  outputs: z
    .object({
      result: z.unknown(), // a command's or an eval's output tails (printOutputTails)
      exitCode: z.number().nullish(),
      summary: z.string().optional(),
      scores: z.array(
        z.object({
          scoreId: z.string().optional(),
          grader: z.string(),
          value: z.number(),
          passed: z.boolean().optional(),
        }),
      ),
      artifacts: z.array(z.object({ name: z.string(), bytes: z.number() })),
    })
    .partial()
    .optional(),
  usage: z.record(z.string(), z.number()).optional(),
  record: z.object({ head: z.string(), length: z.number() }).optional(),
  trajectory: z.object({ eventCount: z.number(), sealedAt: z.string().nullish() }).partial().optional(),
});
type ShownRun = z.infer<typeof ShownRun>;

/** Each score's detail (why its grader passed or failed the run), by score id: `GET /runs/:id/scores`. */
async function scoreDetails(ctx: Context, r: ShownRun): Promise<Map<string, string>> {
  if (!r.outputs?.scores?.length) return new Map();
  const { data } = await ctx.client.GET('/runs/{id}/scores', { params: { path: { id: r.id } } });
  return new Map((data?.scores ?? []).map((s) => [s.id, s.detail]));
}

/**
 * What the run used, as its executor reported it: model calls, tokens (cache reads and writes apart), priced
 * cost, CPU time. Zero and absent measures are left out; a run that reported none shows no usage line.
 */
export function usageLine(u: Readonly<Record<string, number>> | undefined): string | undefined {
  if (!u) return undefined;
  const n = (k: string) => u[k] ?? 0;
  const cache = [
    n('cacheReadTokens') > 0 && `${n('cacheReadTokens')} cache read`,
    n('cacheWriteTokens') > 0 && `${n('cacheWriteTokens')} cache write`,
  ].filter(Boolean);
  const tokens = n('inputTokens') + n('outputTokens') > 0 || cache.length > 0;
  const parts = [
    n('llmCalls') > 0 && `${n('llmCalls')} llm call${n('llmCalls') === 1 ? '' : 's'}`,
    tokens &&
      `${n('inputTokens')} in / ${n('outputTokens')} out tokens${cache.length ? ` (${cache.join(', ')})` : ''}`,
    n('costUsd') > 0 && `$${n('costUsd').toFixed(4)}`,
    n('cpuTimeMs') > 0 && `cpu ${Math.round(n('cpuTimeMs'))} ms`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(' · ') : undefined;
}

/** Label / value rows of a run, in the order a reader asks: what, where it stands, why, what it left. */
function rows(r: ShownRun, details: ReadonlyMap<string, string>): string[][] {
  const out: string[][] = [];
  const add = (label: string, value: string | undefined) => {
    if (value) out.push([label, value]);
  };
  add('subject', r.subject === undefined ? undefined : JSON.stringify(r.subject));
  add(
    'class',
    [r.class, r.lifetime && `lifetime ${r.lifetime}`, r.attempt && `attempt ${r.attempt}`]
      .filter(Boolean)
      .join(' · '),
  );
  add(
    'times',
    [
      r.createdAt && `created ${r.createdAt}`,
      r.startedAt && `started ${r.startedAt}`,
      r.settledAt && `settled ${r.settledAt}`,
      // A held-open session's (or any run's) hard expiry: the reaper closes it then.
      r.expiresAt && !r.settledAt && `expires ${r.expiresAt}`,
    ]
      .filter(Boolean)
      .join(' · '),
  );
  add(
    'caused by',
    r.origin?.causedByRunId ? `${r.origin.causedByRunId} (depth ${r.causalDepth ?? '?'})` : undefined,
  );
  add('group', r.group ? `${r.group.id}${r.group.role ? ` (${r.group.role})` : ''}` : undefined);
  add('error', r.error ? `${r.error.code}: ${r.error.message}` : undefined);
  add(
    'exit code',
    r.outputs?.exitCode === undefined || r.outputs.exitCode === null ? undefined : String(r.outputs.exitCode),
  );
  add('summary', r.outputs?.summary);
  add('usage', usageLine(r.usage));
  for (const s of r.outputs?.scores ?? []) {
    const detail = s.scoreId === undefined ? undefined : details.get(s.scoreId);
    add(
      'score',
      `${s.grader} ${s.value}${s.passed === undefined ? '' : s.passed ? ' (passed)' : ' (failed)'}${detail ? `: ${detail}` : ''}`,
    );
  }
  // The first few, each with the command that fetches it; a run that left thousands is summed up in one line
  // naming the commands that list and fetch them all (`artifact <run>`, `artifact <run> --dir DIR`).
  const artifacts = r.outputs?.artifacts ?? [];
  for (const a of artifacts.slice(0, ARTIFACTS_SHOWN))
    add('artifact', `${a.name} (${a.bytes} bytes; ${quote(['everdict', 'artifact', r.id, a.name])})`);
  if (artifacts.length > ARTIFACTS_SHOWN) {
    const rest = artifacts.slice(ARTIFACTS_SHOWN);
    const bytes = rest.reduce((n, a) => n + a.bytes, 0);
    add(
      'artifact',
      `… and ${rest.length} more (${bytes} bytes; ${quote(['everdict', 'artifact', r.id])} lists them all, --dir DIR fetches them)`,
    );
  }
  add('record', r.record ? `head ${r.record.head} · length ${r.record.length}` : undefined);
  const events = r.trajectory?.eventCount ?? 0;
  add(
    'trajectory',
    r.trajectory
      ? `${events} event${events === 1 ? '' : 's'}${r.trajectory.sealedAt ? ', sealed' : ', live'} (everdict logs ${r.id})`
      : undefined,
  );
  return out;
}

export async function showCommand(ctx: Context, id: string, o: { json?: boolean }): Promise<number> {
  const raw = await ctx.call<unknown>('GET', `/runs/${encodeURIComponent(id)}`);
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify(raw));
    return 0;
  }
  const run = documented(ShownRun, raw, 'run', 'Run');
  line(ctx.io.stdout, `${run.id}  ${run.kind}  ${run.status}`);
  const body = table(['', ''], rows(run, await scoreDetails(ctx, run)))
    .split('\n')
    .slice(1);
  for (const l of body) line(ctx.io.stdout, `  ${l}`);
  printOutputTails(ctx, run);
  return 0;
}

export function registerShow(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('show')
    .description('one run: what it ran, where it stands, why it failed, its scores, record and output')
    .argument('<run>', 'the run id')
    .option('--json', 'the run as the control plane answers it')
    .action((id: string, o: { json?: boolean }) => done(showCommand(ctx(), id, o)));
}
