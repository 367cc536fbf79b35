// Phase 2: graders and judges applied to a group's runs → scores on runs, an aggregate on the group.
// Scoring never edits phase 1: runs are read, never written; a re-score is new rows linked by rescoreOf.
import { z } from 'zod';
import { parseOrThrow, RunModelError } from './errors.js';
import {
  type DeterministicGrader,
  evaluateGrader,
  Grader,
  type GraderInput,
  GraderList,
  graderName,
  type JudgeGrader,
  type Verdict,
} from './grader.js';
import { Id, Timestamp } from './primitives.js';
import type { Run } from './run.js';

export const Score = z.strictObject({
  id: Id,
  scoringId: Id,
  runId: Id,
  groupId: Id,
  grader: z.string().min(1),
  graderType: z.string().min(1),
  value: z.number(),
  passed: z.boolean().optional(),
  detail: z.string(),
  /** The scoring this score re-does; the earlier rows stay as they were. */
  rescoreOf: Id.optional(),
  createdAt: Timestamp,
});
export type Score = z.infer<typeof Score>;

/** Per grader: how many runs it scored, their mean value, and the pass rate (null if it gives no pass/fail). */
export const GraderAggregate = z.strictObject({
  grader: z.string(),
  graderType: z.string(),
  count: z.int().nonnegative(),
  mean: z.number().nullable(),
  passed: z.int().nonnegative(),
  failed: z.int().nonnegative(),
  passRate: z.number().min(0).max(1).nullable(),
});
export type GraderAggregate = z.infer<typeof GraderAggregate>;

export const Aggregate = z.strictObject({
  runs: z.int().nonnegative(),
  graders: z.array(GraderAggregate),
});
export type Aggregate = z.infer<typeof Aggregate>;

/** One application of graders to a group: the record the scores hang off. */
export const Scoring = z.strictObject({
  id: Id,
  groupId: Id,
  graders: z.array(Grader),
  aggregate: Aggregate,
  /**
   * Members not scored: not settled yet, cancelled (stopped before a result: no evidence to grade), or not
   * among the runs handed in. Each counts neither passed nor failed.
   */
  skippedRunIds: z.array(Id),
  rescoreOf: Id.optional(),
  createdAt: Timestamp,
});
export type Scoring = z.infer<typeof Scoring>;

/** A model-based grader's answer. */
export interface JudgeVerdict {
  value: number;
  passed?: boolean;
  detail?: string;
}

/** Model-based grading, injected by the control plane (it fetches trajectories, calls models, prices them). */
export interface Judge {
  grade(request: { run: Run; grader: JudgeGrader }): Promise<JudgeVerdict>;
}

export interface ScoringInput {
  group: { id: string; runIds: readonly string[] };
  runs: readonly Run[];
  graders: readonly GraderInput[];
  /** A fresh id per call: first the scoring's, then one per score (run-major, grader order). */
  ids: () => string;
  now: string;
  /** Set when this scoring re-does an earlier one (see `rescore`). */
  rescoreOf?: string;
}

export interface ScoringResult {
  scoring: Scoring;
  scores: Score[];
}

interface Plan {
  graders: Grader[];
  graded: Run[];
  skipped: string[];
}

/** A run phase 2 can grade: it settled with a result. A cancelled run was stopped before it gave one. */
const hasEvidence = (run: Run): boolean => run.status === 'succeeded' || run.status === 'failed';

function freeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) freeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * What graders and judges see of a run: phase 1 only — a frozen deep copy without the score refs earlier
 * scorings attached (`outputs.scores`), so a verdict never depends on what was scored before (a re-score
 * with the same graders gives the same verdicts) and no grader or injected Judge can edit the caller's run.
 */
export function phaseOneView(run: Run): Run {
  const copy = structuredClone(run);
  copy.outputs.scores = [];
  return freeze(copy);
}

function plan(input: ScoringInput): Plan {
  const graders = parseOrThrow(GraderList, input.graders, 'graders');
  const members = new Set(input.group.runIds);
  const seen = new Set<string>();
  for (const run of input.runs) {
    if (!members.has(run.id)) {
      throw new RunModelError('invalid_input', `run ${run.id} is not a member of group ${input.group.id}`, {
        runId: run.id,
        groupId: input.group.id,
      });
    }
    if (seen.has(run.id))
      throw new RunModelError('invalid_input', `run ${run.id} given twice`, { runId: run.id });
    seen.add(run.id);
  }
  const graded = input.runs.filter(hasEvidence).map(phaseOneView);
  const gradedIds = new Set(graded.map((r) => r.id));
  // Every member not graded is listed: live, cancelled, or not handed in at all — never silently dropped.
  const skipped = [...members].filter((id) => !gradedIds.has(id));
  return { graders, graded, skipped };
}

/** Mean, pass counts and pass rate per grader, in grader order. */
export function aggregate(graders: readonly Grader[], scores: readonly Score[]): Aggregate {
  const runs = new Set(scores.map((s) => s.runId)).size;
  return {
    runs,
    graders: graders.map((g) => {
      const mine = scores.filter((s) => s.grader === graderName(g));
      const judged = mine.filter((s) => s.passed !== undefined);
      const passed = judged.filter((s) => s.passed).length;
      return {
        grader: graderName(g),
        graderType: g.type,
        count: mine.length,
        mean: mine.length ? mine.reduce((sum, s) => sum + s.value, 0) / mine.length : null,
        passed,
        failed: judged.length - passed,
        passRate: judged.length ? passed / judged.length : null,
      };
    }),
  };
}

function assemble(input: ScoringInput, p: Plan, verdicts: Verdict[][]): ScoringResult {
  const scoringId = input.ids();
  const scores: Score[] = [];
  p.graded.forEach((run, r) => {
    p.graders.forEach((g, i) => {
      const v = verdicts[r]?.[i];
      if (v === undefined) return;
      scores.push({
        id: input.ids(),
        scoringId,
        runId: run.id,
        groupId: input.group.id,
        grader: graderName(g),
        graderType: g.type,
        value: v.value,
        ...(v.passed !== undefined && { passed: v.passed }),
        detail: v.detail,
        ...(input.rescoreOf !== undefined && { rescoreOf: input.rescoreOf }),
        createdAt: input.now,
      });
    });
  });
  const scoring: Scoring = {
    id: scoringId,
    groupId: input.group.id,
    graders: p.graders,
    aggregate: aggregate(p.graders, scores),
    skippedRunIds: p.skipped,
    ...(input.rescoreOf !== undefined && { rescoreOf: input.rescoreOf }),
    createdAt: input.now,
  };
  return { scoring, scores };
}

function isDeterministic(g: Grader): g is DeterministicGrader {
  return g.type !== 'judge';
}

/**
 * Evaluate deterministic graders over a group's settled runs: scores + the group aggregate. Pure and
 * synchronous; judge graders are refused here (use `scoreGroup` with a Judge).
 */
export function applyGraders(input: ScoringInput): ScoringResult {
  const p = plan(input);
  const judge = p.graders.find((g) => !isDeterministic(g));
  if (judge) {
    throw new RunModelError('invalid_input', `grader ${graderName(judge)} needs a Judge; use scoreGroup`);
  }
  const verdicts = p.graded.map((run) =>
    p.graders.filter(isDeterministic).map((g) => evaluateGrader(g, run)),
  );
  return assemble(input, p, verdicts);
}

function checkJudgeVerdict(v: JudgeVerdict, grader: JudgeGrader): Verdict {
  if (!Number.isFinite(v.value)) {
    throw new RunModelError('invalid_input', `judge ${graderName(grader)} returned a non-finite value`);
  }
  const out: Verdict = { value: v.value, detail: v.detail ?? '' };
  if (v.passed !== undefined) out.passed = v.passed;
  return out;
}

/** Deterministic graders and judges together; the judge is called once per (settled run, judge grader). */
export async function scoreGroup(input: ScoringInput & { judge?: Judge }): Promise<ScoringResult> {
  const p = plan(input);
  const { judge } = input;
  const verdicts = await Promise.all(
    p.graded.map((run) =>
      Promise.all(
        p.graders.map(async (g): Promise<Verdict> => {
          if (isDeterministic(g)) return evaluateGrader(g, run);
          if (!judge) throw new RunModelError('invalid_input', `grader ${graderName(g)} needs a Judge`);
          return checkJudgeVerdict(await judge.grade({ run, grader: g }), g);
        }),
      ),
    ),
  );
  return assemble(input, p, verdicts);
}

function checkSameGroup(previous: Scoring, groupId: string): void {
  if (previous.groupId !== groupId) {
    throw new RunModelError('invalid_input', `scoring ${previous.id} belongs to group ${previous.groupId}`);
  }
}

/**
 * A re-score of an earlier scoring with deterministic graders: new rows linked by `rescoreOf`; the earlier
 * scoring is not touched. A re-score with a judge is `rescoreGroup`.
 */
export function rescore(previous: Scoring, input: Omit<ScoringInput, 'rescoreOf'>): ScoringResult {
  checkSameGroup(previous, input.group.id);
  return applyGraders({ ...input, rescoreOf: previous.id });
}

/** `rescore` with any graders, judges included ("re-score with a different judge"): `scoreGroup` + rescoreOf. */
export async function rescoreGroup(
  previous: Scoring,
  input: Omit<ScoringInput, 'rescoreOf'> & { judge?: Judge },
): Promise<ScoringResult> {
  checkSameGroup(previous, input.group.id);
  return await scoreGroup({ ...input, rescoreOf: previous.id });
}

/** A copy of the run with these scores appended to outputs.scores (the join point); phase-1 fields untouched. */
export function withScores(run: Run, scores: readonly Score[]): Run {
  const refs = scores
    .filter((s) => s.runId === run.id)
    .map((s) => ({
      scoreId: s.id,
      scoringId: s.scoringId,
      grader: s.grader,
      value: s.value,
      ...(s.passed !== undefined && { passed: s.passed }),
    }));
  return { ...run, outputs: { ...run.outputs, scores: [...run.outputs.scores, ...refs] } };
}
