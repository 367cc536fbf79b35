// Phase 2, in run-model's vocabulary: its graders (and an injected Judge) applied over a group's settled
// runs by `scoreGroup` — scores land on runs (`withScores`), the aggregate on the group; a re-score is
// new rows linked by `rescoreOf`, and phase 1 (status, outputs other than `scores`) is never edited.
import {
  Aggregate,
  Grader,
  type GraderInput,
  graderName,
  type Judge,
  Scoring,
  scoreGroup,
  withScores,
} from '@everdict/run-model';
import type { Selectable } from 'kysely';
import { iso, json } from '../db/numeric.js';
import type { RunGroupsTable } from '../db/schema.js';
import { type Executor, withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { appendEvents } from '../ledger/events.js';
import { rowToRun, selectRunRows } from '../ledger/runs.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import type { ScoreView, ScoringView } from './types.js';

type GroupRow = Selectable<RunGroupsTable>;

/** A stored scoring as run-model's `Scoring` (rows written before 0003 show what still parses). */
export async function scoringView(ex: Executor, id: string | null): Promise<ScoringView | null> {
  if (!id) return null;
  const s = await ex.selectFrom('scorings').selectAll().where('id', '=', id).executeTakeFirst();
  if (!s) return null;
  const view = {
    id: s.id,
    groupId: s.group_id,
    graders: s.graders,
    aggregate: s.aggregate,
    skippedRunIds: s.skipped_run_ids,
    ...(s.rescore_of ? { rescoreOf: s.rescore_of } : {}),
    createdAt: iso(s.created_at)!,
  };
  const parsed = Scoring.safeParse(view);
  if (parsed.success) return parsed.data;
  const graders = s.graders.flatMap((g) => {
    const ok = Grader.safeParse(g);
    return ok.success ? [ok.data] : [];
  });
  const aggregate = Aggregate.safeParse(s.aggregate);
  return { ...view, graders, aggregate: aggregate.success ? aggregate.data : { runs: 0, graders: [] } };
}

/**
 * Every verdict phase 2 gave one run, oldest first (re-scores after what they re-do), each with its detail —
 * why it passed or failed, which the run's `outputs.scores` refs do not carry. Rows written before 0003 keep
 * an object detail: shown as its JSON.
 */
export async function runScores(ex: Executor, tenant: string, runId: string): Promise<ScoreView[]> {
  const rows = await ex
    .selectFrom('scores')
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  // Within one scoring (its scores share a time), in the order its graders were given.
  const scoringIds = [...new Set(rows.map((r) => r.scoring_id))];
  const graders =
    scoringIds.length === 0
      ? []
      : await ex.selectFrom('scorings').select(['id', 'graders']).where('id', 'in', scoringIds).execute();
  const position = new Map(
    graders.flatMap((s) =>
      (Array.isArray(s.graders) ? (s.graders as Grader[]) : []).map(
        (g, i) => [`${s.id}/${graderName(g)}`, i] as const,
      ),
    ),
  );
  const at = (r: (typeof rows)[number]) =>
    position.get(`${r.scoring_id}/${r.grader}`) ?? Number.MAX_SAFE_INTEGER;
  const time = (r: (typeof rows)[number]) => new Date(r.created_at).getTime();
  rows.sort((a, b) => time(a) - time(b) || a.scoring_id.localeCompare(b.scoring_id) || at(a) - at(b));
  return rows.map((r) => ({
    id: r.id,
    scoringId: r.scoring_id,
    runId: r.run_id,
    groupId: r.group_id ?? '',
    grader: r.grader,
    graderType: r.grader_type || 'unknown',
    value: r.value,
    ...(r.passed === null ? {} : { passed: r.passed }),
    detail: typeof r.detail === 'string' ? r.detail : JSON.stringify(r.detail ?? ''),
    ...(r.rescore_of ? { rescoreOf: r.rescore_of } : {}),
    createdAt: iso(r.created_at)!,
  }));
}

export interface ScoreRequest {
  graders: GraderInput[];
  rescoreOf: string | null;
  judge: Judge | undefined;
  /**
   * Runs in the transaction that saves the scoring, before the group row is written (a promotion's kind
   * change): its refusal leaves no scoring saved, so a change and its scoring commit together or not at all.
   */
  within?: (tx: Executor) => Promise<void>;
}

/** Score a group's runs and save the result; returns run-model's Scoring and its Score rows. */
export async function scoreTx(
  deps: Deps,
  tenant: string,
  group: GroupRow,
  req: ScoreRequest,
): Promise<{ scoring: ScoringView; scores: ScoreView[] }> {
  const judged = req.graders.find((g) => g.type === 'judge');
  if (judged && !req.judge) {
    throw new ControlPlaneError(
      'judge_unavailable',
      `grader ${judged.name ?? 'judge'} needs a judge, and none is configured (EVERDICT_JUDGE)`,
      { grader: judged.name ?? judged.type },
    );
  }
  if (req.rescoreOf) {
    const prev = await deps.db
      .selectFrom('scorings')
      .select('id')
      .where('tenant_id', '=', tenant)
      .where('group_id', '=', group.id)
      .where('id', '=', req.rescoreOf)
      .executeTakeFirst();
    if (!prev) throw notFound('scoring', req.rescoreOf);
  }
  const rows = await selectRunRows(deps.db)
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('group_id', '=', group.id)
    .orderBy('id')
    .execute();
  // run-model grades only runs with evidence: a cancelled run (stopped before a result) or an unsettled one
  // gets no verdict — no score, counted neither passed nor failed, never sent to a judge — and is listed in
  // `skippedRunIds`.
  let first = true;
  const ids = () => {
    const id = deps.ids(first ? 'scoring' : 'score');
    first = false;
    return id;
  };
  // Graders and the judge run outside any transaction: a model judge may take seconds, locks must not.
  // Of what run-model refuses, only the parse of `graders` (the request body's) names fields.
  const scored = await asControlPlaneError(
    () =>
      scoreGroup({
        group: { id: group.id, runIds: rows.map((r) => r.id) },
        runs: rows.map(rowToRun),
        graders: req.graders,
        ids,
        now: deps.clock().toISOString(),
        ...(req.rescoreOf ? { rescoreOf: req.rescoreOf } : {}),
        ...(req.judge ? { judge: req.judge } : {}),
      }),
    { in: 'body', at: ['graders'] },
  );
  const { scoring, scores } = scored;
  await withTx(deps.db, (tx) => saveScoring(tx, tenant, scoring, scores, req.within));
  return { scoring, scores };
}

async function saveScoring(
  tx: Executor,
  tenant: string,
  scoring: ScoringView,
  scores: ScoreView[],
  within?: (tx: Executor) => Promise<void>,
) {
  await tx
    .insertInto('scorings')
    .values({
      id: scoring.id,
      tenant_id: tenant,
      group_id: scoring.groupId,
      graders: json(scoring.graders),
      rescore_of: scoring.rescoreOf ?? null,
      aggregate: json(scoring.aggregate),
      skipped_run_ids: json(scoring.skippedRunIds),
      created_at: scoring.createdAt,
    })
    .execute();
  if (scores.length > 0) {
    await tx
      .insertInto('scores')
      .values(
        scores.map((s) => ({
          id: s.id,
          tenant_id: tenant,
          run_id: s.runId,
          group_id: s.groupId,
          scoring_id: s.scoringId,
          grader: s.grader,
          grader_type: s.graderType,
          value: s.value,
          passed: s.passed ?? null,
          detail: json(s.detail),
          rescore_of: s.rescoreOf ?? null,
          created_at: s.createdAt,
        })),
      )
      .execute();
  }
  // Scores land on runs: refs appended to outputs.scores of the freshly locked row (never a stale copy).
  const scored = [...new Set(scores.map((s) => s.runId))].sort();
  if (scored.length > 0) {
    const locked = await selectRunRows(tx)
      .selectAll()
      .where('tenant_id', '=', tenant)
      .where('id', 'in', scored)
      .orderBy('id')
      .forUpdate()
      .execute();
    for (const row of locked) {
      const run = withScores(rowToRun(row), scores);
      await tx
        .updateTable('runs')
        .set({ outputs: json(run.outputs) })
        .where('id', '=', row.id)
        .execute();
    }
  }
  // Runs are locked before the group, as every scoring does (one lock order, no deadlock between them).
  await within?.(tx);
  await tx
    .updateTable('run_groups')
    .set({ scoring_id: scoring.id, updated_at: scoring.createdAt })
    .where('id', '=', scoring.groupId)
    .execute();
  await appendEvents(tx, [
    {
      tenant,
      kind: 'group.scored',
      at: scoring.createdAt,
      data: {
        groupId: scoring.groupId,
        scoringId: scoring.id,
        ...(scoring.rescoreOf ? { rescoreOf: scoring.rescoreOf } : {}),
        aggregate: scoring.aggregate,
      },
    },
  ]);
}
