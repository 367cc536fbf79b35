// everdict experiment <kind> [argv…] -n N | --cases FILE — N runs of one spec, or one run per case of a dataset,
// as one group (POST /groups), a progress bar while they run, then the graders applied and the score table
// printed. Exit 1 when a run failed.
// everdict score <group> --grader JSON… — (re-)score a group and print the table.
import { readFile } from 'node:fs/promises';
import { text as readText } from 'node:stream/consumers';
import type { components } from '@everdict/client';
import { GraderList } from '@everdict/run-model';
import type { Command } from 'commander';
import { z } from 'zod';
import { pause } from '../backoff.js';
import { type Context, type Done, reportingCall } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { fmtNumber, progressBar, table } from '../table.js';
import { collect, parseJsonArray } from './options.js';
import { type RunOptions, runSpecOf, subjectOptions } from './run.js';
import { usageLine } from './show.js';

export interface GroupSummary {
  id: string;
  kind: string;
  label: string;
  runIds: string[];
  rollup: {
    total: number;
    byStatus: Record<string, number>;
    status: string;
    /** What its runs used, summed (absent from an older control plane's answer). */
    usage?: Record<string, number>;
  };
  scoring: ScoringSummary | null;
}

interface GraderAggregate {
  grader: string;
  passRate?: number | null;
  mean?: number | null;
  scored?: number;
  count?: number;
  n?: number;
}
interface ScoringSummary {
  id: string;
  rescoreOf?: string | null;
  aggregate: { graders: GraderAggregate[] };
}

const SETTLED = ['succeeded', 'failed', 'cancelled'];
const settledOf = (g: GroupSummary) => SETTLED.reduce((n, s) => n + (g.rollup.byStatus[s] ?? 0), 0);

export const DEFAULT_GRADERS = [{ type: 'exit_code' }];

/**
 * The `--grader` specs, checked before any call by run-model's `GraderList` — the schema the control plane's
 * scoring reads — so a misspelt grader is a usage error (exit 2) before an experiment's runs are made, not a 400
 * after they all ran. Whether a judge grader's judge is configured only the control plane knows.
 */
export function gradersOf(specs: readonly string[] | undefined): unknown[] {
  if (!specs || specs.length === 0) return DEFAULT_GRADERS;
  const graders = specs.flatMap((s) => parseJsonArray('--grader', s));
  const checked = GraderList.safeParse(graders);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const [at, ...field] = issue.path;
    const which = typeof at === 'number' ? `grader ${at + 1}` : 'the graders';
    const where = field.length > 0 ? ` (${field.join('.')})` : '';
    throw new CliError('usage', `--grader: ${which}${where}: ${issue.message}`);
  }
  return graders;
}

export function scoreTable(scoring: ScoringSummary): string {
  return table(
    ['grader', 'pass rate', 'mean', 'scored'],
    scoring.aggregate.graders.map((g) => [
      g.grader,
      g.passRate === undefined || g.passRate === null ? '-' : `${fmtNumber(g.passRate * 100, 1)}%`,
      fmtNumber(g.mean ?? null, 3),
      String(g.scored ?? g.count ?? g.n ?? '-'),
    ]),
  );
}

export async function waitGroup(
  ctx: Context,
  id: string,
  opts: { progress: boolean; signal?: AbortSignal; pollMs?: number },
): Promise<GroupSummary> {
  const tty = Boolean(ctx.io.stderr.isTTY);
  let last = '';
  for (;;) {
    const g = await reportingCall(ctx.io, () =>
      ctx.call<GroupSummary>('GET', `/groups/${encodeURIComponent(id)}`),
    );
    const done = settledOf(g);
    if (opts.progress) {
      const running = g.rollup.byStatus.running ?? 0;
      const failed = g.rollup.byStatus.failed ?? 0;
      const cancelled = g.rollup.byStatus.cancelled ?? 0;
      const text = progressBar(
        done,
        g.rollup.total,
        `settled · ${running} running · ${failed} failed${cancelled > 0 ? ` · ${cancelled} cancelled` : ''}`,
      );
      if (text !== last) {
        ctx.io.stderr.write(tty ? `\r${text}` : `${text}\n`);
        last = text;
      }
    }
    if (done >= g.rollup.total || opts.signal?.aborted) {
      if (opts.progress && tty) ctx.io.stderr.write('\n');
      return g;
    }
    await pause(opts.pollMs ?? 250, opts.signal);
  }
}

/** One grader's verdict on one run, as `POST /groups/:id/score` answers it. */
export type Verdict = components['schemas']['Score'];

export async function scoreGroup(
  ctx: Context,
  id: string,
  graders: unknown[],
  rescoreOf?: string,
): Promise<{ scoring: ScoringSummary; scores: Verdict[] }> {
  return ctx.call<{ scoring: ScoringSummary; scores: Verdict[] }>(
    'POST',
    `/groups/${encodeURIComponent(id)}/score`,
    { graders, ...(rescoreOf ? { rescoreOf } : {}) },
  );
}

/** Failed verdicts listed after the score table; the rest are a count (`everdict show <run>` has every one). */
export const FAILED_SHOWN = 20;

/**
 * The failed verdicts, each with its run, its case (an eval's `caseId`) and why it failed — which cases a pass
 * rate below 100 % is made of. The runs shown are fetched for their case ids (at most FAILED_SHOWN).
 */
export async function printFailedVerdicts(ctx: Context, scores: readonly Verdict[]): Promise<void> {
  const failed = scores.filter((s) => s.passed === false);
  if (failed.length === 0) return;
  const shown = failed.slice(0, FAILED_SHOWN);
  const caseOf = new Map(
    await Promise.all(
      [...new Set(shown.map((s) => s.runId))].map(async (runId) => {
        const run = await ctx.call<{ subject?: { caseId?: unknown } }>(
          'GET',
          `/runs/${encodeURIComponent(runId)}`,
        );
        const caseId = run.subject?.caseId;
        return [runId, typeof caseId === 'string' ? caseId : '-'] as const;
      }),
    ),
  );
  line(ctx.io.stdout, '');
  line(ctx.io.stdout, `${failed.length} failed verdict${failed.length === 1 ? '' : 's'}:`);
  line(
    ctx.io.stdout,
    table(
      ['run', 'case', 'grader', 'why'],
      shown.map((s) => [s.runId, caseOf.get(s.runId) ?? '-', s.grader, s.detail]),
    ),
  );
  if (failed.length > shown.length)
    line(
      ctx.io.stdout,
      `… and ${failed.length - shown.length} more (everdict show <run> lists a run's verdicts)`,
    );
}

interface ExperimentOptions extends RunOptions {
  repeat?: string;
  cases?: string;
  label?: string;
  grader?: string[];
  score?: boolean;
}

export async function experimentCommand(
  ctx: Context,
  kind: string,
  argv: readonly string[],
  o: ExperimentOptions,
): Promise<number> {
  if ((o.repeat === undefined) === (o.cases === undefined))
    throw new CliError(
      'usage',
      'experiment: give -n N (runs of one spec) or --cases FILE (one run per case)',
    );
  if (o.repeat !== undefined && (!/^\d+$/.test(o.repeat) || Number(o.repeat) < 1))
    throw new CliError('usage', '-n is a positive number');
  const cases = o.cases === undefined ? undefined : await readCases(ctx, o.cases);
  // Over a dataset an eval's case id comes from each case (`caseId`, else `id`; --case names the rest).
  const spec = runSpecOf(kind, argv, cases && kind === 'eval' ? { ...o, case: o.case ?? 'case' } : o);
  const graders = o.score === false ? null : gradersOf(o.grader); // checked before any run is made
  const n = cases?.length ?? Number(o.repeat);
  const created = await ctx.call<{ group: GroupSummary }>('POST', '/groups', {
    kind: 'experiment',
    label: o.label ?? (cases ? `${kind} over ${o.cases === '-' ? 'stdin' : o.cases}` : `${kind} ×${n}`),
    ...(cases ? { cases } : { repeat: n }),
    spec,
  });
  const id = created.group.id;
  line(ctx.io.stderr, `${id}: ${n} ${kind} runs queued`);
  const group = await waitGroup(ctx, id, {
    progress: !o.json,
    ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
  });
  // Interrupted before every run settled: no scoring of a partial group, no verdict on it.
  if (settledOf(group) < group.rollup.total)
    throw new CliError(
      'interrupted',
      `stopped waiting: ${id} has ${settledOf(group)} of ${group.rollup.total} runs settled (not scored; the rest go on: everdict cancel ${id} stops them)`,
    );
  const scored = graders === null ? null : await scoreGroup(ctx, id, graders);
  const scoring = scored?.scoring ?? null;
  if (o.json)
    line(
      ctx.io.stdout,
      JSON.stringify({ group: { ...group, scoring }, scoring, scores: scored?.scores ?? [] }),
    );
  else {
    line(ctx.io.stdout, `group ${id} ${group.rollup.status} (${JSON.stringify(group.rollup.byStatus)})`);
    const used = usageLine(group.rollup.usage);
    if (used) line(ctx.io.stdout, `usage ${used}`);
    if (scored) {
      line(ctx.io.stdout, `scoring ${scored.scoring.id}`);
      line(ctx.io.stdout, scoreTable(scored.scoring));
      await printFailedVerdicts(ctx, scored.scores);
    }
  }
  const failed = (group.rollup.byStatus.failed ?? 0) + (group.rollup.byStatus.cancelled ?? 0);
  if (failed > 0) throw new CliError('run_failed', `${failed} of ${group.rollup.total} runs did not succeed`);
  return 0;
}

/** The most cases one group takes (`POST /groups`). */
const MAX_CASES = 10_000;
const Cases = z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_CASES);

/**
 * A dataset: a JSON array of case objects, or JSON Lines (one case object a line, blank lines skipped); `-` reads
 * stdin. Anything else is a usage error naming the file (and the line).
 */
export async function readCases(ctx: Context, file: string): Promise<Record<string, unknown>[]> {
  let text: string;
  try {
    text = file === '-' ? await readText(ctx.io.stdin) : await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError('usage', `--cases ${file}: ${(e as Error).message}`);
  }
  const values: unknown[] = [];
  if (text.trimStart().startsWith('[')) {
    try {
      values.push(...(JSON.parse(text) as unknown[]));
    } catch {
      throw new CliError('usage', `--cases ${file}: not a JSON array`);
    }
  } else
    for (const [i, row] of text.split('\n').entries()) {
      if (!row.trim()) continue;
      try {
        values.push(JSON.parse(row));
      } catch {
        throw new CliError('usage', `--cases ${file}:${i + 1}: not JSON`);
      }
    }
  const cases = Cases.safeParse(values);
  if (!cases.success)
    throw new CliError('usage', `--cases ${file}: 1 to ${MAX_CASES} cases, each a JSON object`);
  return cases.data;
}

export async function scoreCommand(
  ctx: Context,
  id: string,
  o: { grader?: string[]; rescoreOf?: string; rescore?: boolean; json?: boolean },
): Promise<number> {
  let rescoreOf = o.rescoreOf;
  if (o.rescore && !rescoreOf) {
    const g = await ctx.call<GroupSummary>('GET', `/groups/${encodeURIComponent(id)}`);
    rescoreOf = g.scoring?.id;
    if (!rescoreOf) throw new CliError('usage', `${id} has no scoring to re-score`);
  }
  const { scoring, scores } = await scoreGroup(ctx, id, gradersOf(o.grader), rescoreOf);
  if (o.json) line(ctx.io.stdout, JSON.stringify(scoring));
  else {
    line(
      ctx.io.stdout,
      `scoring ${scoring.id}${scoring.rescoreOf ? ` (re-scores ${scoring.rescoreOf})` : ''}`,
    );
    line(ctx.io.stdout, scoreTable(scoring));
    await printFailedVerdicts(ctx, scores);
  }
  return 0;
}

export function registerExperiment(program: Command, ctx: () => Context, done: Done): void {
  subjectOptions(
    program
      .command('experiment')
      .description(
        'N runs of one spec, or one per case of a dataset, as an experiment group: progress, then scores',
      )
      .argument('<kind>', 'the kind of each run (eval, command, analysis, …)')
      .argument('[argv...]', 'for `command`: the argv (after --)')
      .option('-n, --repeat <n>', 'how many runs of the one spec')
      .option(
        '--cases <file>',
        'one run per case: a JSON array or JSON Lines of case objects (- reads stdin)',
      )
      .option('--label <label>', "the group's label")
      .option('--grader <json>', 'a grader spec (repeatable; default {"type":"exit_code"})', collect)
      .option('--no-score', 'do not score when the runs have settled'),
  )
    .option('--envelope-runs <n>', 'each run opens an envelope capped at n runs')
    .option('--json', 'print JSON')
    .action((kind: string, argv: string[], o: ExperimentOptions) =>
      done(experimentCommand(ctx(), kind, argv, o)),
    );

  program
    .command('score')
    .description("apply graders to a group's runs (a re-score links to the scoring it re-does)")
    .argument('<group>', 'the group id')
    .option('--grader <json>', 'a grader spec (repeatable; default {"type":"exit_code"})', collect)
    .option('--rescore-of <scoring>', 'the scoring this one re-does')
    .option('--rescore', "re-do the group's latest scoring")
    .option('--json', 'print JSON')
    .action((id: string, o: { grader?: string[]; rescoreOf?: string; rescore?: boolean; json?: boolean }) =>
      done(scoreCommand(ctx(), id, o)),
    );
}
