// everdict compare <base-group> <group> [--strict] [--json] — two scored groups side by side: each grader's pass
// rate in both latest scorings and the change, then, where the runs carry case ids (an eval over a dataset), each
// case whose verdict changed — a regression (passed → failed) or a fix (failed → passed). `--strict` exits 1 when
// any case regressed: a gate for CI ("the new harness version may not fail a case the old one passed").
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { fmtNumber, table } from '../table.js';
import type { GroupSummary } from './experiment.js';
import { listRuns, MAX_PAGE } from './runs.js';

interface ScoredRun {
  id: string;
  subject?: { caseId?: unknown } | null;
  outputs?: { scores?: { scoringId: string; grader: string; passed?: boolean }[] } | null;
}

/** One group's latest scoring: pass rate per grader, and each case's verdict per grader. */
interface Side {
  group: GroupSummary;
  passRates: Map<string, number | null>;
  verdicts: Map<string, Map<string, boolean>>; // caseId → grader → passed
  /** Case ids more than one run of the group carries: which verdict is the case's is not known, so none is. */
  repeated: Set<string>;
}

async function sideOf(ctx: Context, id: string): Promise<Side> {
  const group = await ctx.call<GroupSummary>('GET', `/groups/${encodeURIComponent(id)}`);
  const scoring = group.scoring;
  if (!scoring) throw new CliError('usage', `${id} has no scoring: everdict score ${id} first`);
  const runs = await listRuns<ScoredRun>(
    ctx,
    new URLSearchParams({ groupId: id, limit: String(MAX_PAGE) }),
    true,
  );
  const verdicts = new Map<string, Map<string, boolean>>();
  const repeated = new Set<string>();
  for (const run of runs) {
    const caseId = run.subject?.caseId;
    if (typeof caseId !== 'string') continue; // no case id: only the pass rates compare
    if (verdicts.has(caseId)) repeated.add(caseId);
    const mine = new Map<string, boolean>();
    for (const s of run.outputs?.scores ?? [])
      if (s.scoringId === scoring.id && s.passed !== undefined) mine.set(s.grader, s.passed);
    verdicts.set(caseId, mine);
  }
  for (const caseId of repeated) verdicts.delete(caseId);
  return {
    group,
    passRates: new Map(scoring.aggregate.graders.map((g) => [g.grader, g.passRate ?? null])),
    verdicts,
    repeated,
  };
}

const pct = (r: number | null | undefined) =>
  r === null || r === undefined ? '-' : `${fmtNumber(r * 100, 1)}%`;
const delta = (a: number | null | undefined, b: number | null | undefined) =>
  a === null || a === undefined || b === null || b === undefined
    ? '-'
    : `${b >= a ? '+' : ''}${fmtNumber((b - a) * 100, 1)}`;

interface CaseChange {
  caseId: string;
  grader: string;
  from: 'passed' | 'failed';
  to: 'passed' | 'failed';
}

/** Cases in both groups whose verdict for a grader they share changed, regressions first. */
export function caseChanges(base: Pick<Side, 'verdicts'>, next: Pick<Side, 'verdicts'>): CaseChange[] {
  const out: CaseChange[] = [];
  for (const [caseId, after] of next.verdicts) {
    const before = base.verdicts.get(caseId);
    if (!before) continue;
    for (const [grader, passed] of after) {
      const was = before.get(grader);
      if (was === undefined || was === passed) continue;
      out.push({ caseId, grader, from: was ? 'passed' : 'failed', to: passed ? 'passed' : 'failed' });
    }
  }
  const rank = (c: CaseChange) => (c.to === 'failed' ? 0 : 1);
  return out.sort(
    (a, b) => rank(a) - rank(b) || a.caseId.localeCompare(b.caseId) || a.grader.localeCompare(b.grader),
  );
}

export async function compareCommand(
  ctx: Context,
  baseId: string,
  nextId: string,
  o: { strict?: boolean; json?: boolean },
): Promise<number> {
  const [base, next] = await Promise.all([sideOf(ctx, baseId), sideOf(ctx, nextId)]);
  const graders = [...new Set([...base.passRates.keys(), ...next.passRates.keys()])];
  const changes = caseChanges(base, next);
  const regressions = changes.filter((c) => c.to === 'failed');
  const shared = [...next.verdicts.keys()].filter((c) => base.verdicts.has(c)).length;
  if (o.json)
    line(
      ctx.io.stdout,
      JSON.stringify({
        base: baseId,
        group: nextId,
        graders: graders.map((g) => ({
          grader: g,
          base: base.passRates.get(g) ?? null,
          group: next.passRates.get(g) ?? null,
        })),
        casesCompared: shared,
        changes,
      }),
    );
  else {
    line(
      ctx.io.stdout,
      table(
        ['grader', `base ${baseId}`, `group ${nextId}`, 'Δ points'],
        graders.map((g) => [
          g,
          pct(base.passRates.get(g)),
          pct(next.passRates.get(g)),
          delta(base.passRates.get(g), next.passRates.get(g)),
        ]),
      ),
    );
    line(ctx.io.stdout, '');
    if (shared === 0)
      line(
        ctx.io.stdout,
        'no case in both groups: cases are matched by their case id (an eval over a dataset); these runs carry none',
      );
    else {
      line(
        ctx.io.stdout,
        `${shared} case${shared === 1 ? '' : 's'} in both: ${regressions.length} regressed (passed → failed), ${changes.length - regressions.length} fixed (failed → passed)`,
      );
      const repeated = new Set([...base.repeated, ...next.repeated]).size;
      if (repeated > 0)
        line(ctx.io.stdout, `${repeated} case id(s) with more than one run in a group: not compared`);
      if (changes.length > 0)
        line(
          ctx.io.stdout,
          table(
            ['case', 'grader', 'base', 'group'],
            changes.map((c) => [c.caseId, c.grader, c.from, c.to]),
          ),
        );
    }
  }
  if (o.strict && regressions.length > 0)
    throw new CliError(
      'run_failed',
      `${regressions.length} case verdict(s) regressed from ${baseId} to ${nextId}`,
    );
  return 0;
}

export function registerCompare(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('compare')
    .description('two scored groups side by side: pass rates, and each case whose verdict changed')
    .argument('<base>', 'the group compared against (the baseline)')
    .argument('<group>', 'the group compared')
    .option('--strict', 'exit 1 when any case regressed (passed → failed)')
    .option('--json', 'print JSON')
    .action((base: string, group: string, o: { strict?: boolean; json?: boolean }) =>
      done(compareCommand(ctx(), base, group, o)),
    );
}
