// Phase 2: apply graders over a group's runs — scores land on runs, the aggregate on the group; a
// re-scoring links to the scoring it supersedes (rescoreOf) and never edits phase 1.
import type { Run } from '@everdict/run-model';
import type { Selectable } from 'kysely';
import { iso, json } from '../db/numeric.js';
import type { RunGroupsTable } from '../db/schema.js';
import { type Executor, withTx } from '../db/tx.js';
import { notFound } from '../errors.js';
import { rowToRun } from '../ledger/runs.js';
import type { Deps } from './context.js';
import { graderFor } from './graders.js';
import type { GraderSpec, ScoreView, ScoringView } from './types.js';

type GroupRow = Selectable<RunGroupsTable>;

export async function scoringView(ex: Executor, id: string | null): Promise<ScoringView | null> {
  if (!id) return null;
  const s = await ex.selectFrom('scorings').selectAll().where('id', '=', id).executeTakeFirst();
  if (!s) return null;
  return {
    id: s.id,
    groupId: s.group_id,
    graders: s.graders as unknown as GraderSpec[],
    rescoreOf: s.rescore_of,
    aggregate: s.aggregate as ScoringView['aggregate'],
    createdAt: iso(s.created_at)!,
  };
}

export async function scoreTx(
  deps: Deps,
  tenant: string,
  group: GroupRow,
  graders: GraderSpec[],
  rescoreOf: string | null,
) {
  return withTx(deps.db, async (tx) => {
    const parsed = graders.map((g) => ({
      name: g.name,
      type: g.type,
      config: g.config ?? {},
      fn: graderFor(g.type),
    }));
    if (rescoreOf) {
      const prev = await tx
        .selectFrom('scorings')
        .select('id')
        .where('id', '=', rescoreOf)
        .where('group_id', '=', group.id)
        .executeTakeFirst();
      if (!prev) throw notFound('scoring', rescoreOf);
    }
    const scoringId = deps.ids('scoring');
    const at = deps.clock().toISOString();
    const rows = await tx
      .selectFrom('runs')
      .selectAll()
      .where('tenant_id', '=', tenant)
      .where('group_id', '=', group.id)
      .orderBy('id')
      .forUpdate()
      .execute();
    const scores: ScoreView[] = [];
    const agg: Record<string, { sum: number; n: number; passed: number; judged: number }> = {};
    const perRun = new Map<string, ScoreView[]>();
    for (const row of rows) {
      const run: Run = rowToRun(row);
      for (const g of parsed) {
        const grade = g.fn(run, g.config);
        const s: ScoreView = {
          id: deps.ids('score'),
          runId: run.id,
          groupId: group.id,
          scoringId,
          grader: g.name,
          value: grade.value,
          passed: grade.passed,
          detail: grade.detail,
          rescoreOf,
          createdAt: at,
        };
        scores.push(s);
        perRun.set(run.id, [...(perRun.get(run.id) ?? []), s]);
        const a = agg[g.name] ?? { sum: 0, n: 0, passed: 0, judged: 0 };
        agg[g.name] = a;
        a.sum += grade.value;
        a.n++;
        if (grade.passed !== null) {
          a.judged++;
          if (grade.passed) a.passed++;
        }
      }
    }
    const aggregate = Object.fromEntries(
      Object.entries(agg).map(([k, a]) => [
        k,
        { mean: a.n ? a.sum / a.n : 0, passRate: a.judged ? a.passed / a.judged : null, n: a.n },
      ]),
    );
    const specs = parsed.map(({ name, type, config }) => ({ name, type, config }));
    await tx
      .insertInto('scorings')
      .values({
        id: scoringId,
        tenant_id: tenant,
        group_id: group.id,
        graders: json(specs),
        rescore_of: rescoreOf,
        aggregate: json(aggregate),
        created_at: at,
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
            value: s.value,
            passed: s.passed,
            detail: json(s.detail),
            rescore_of: s.rescoreOf,
            created_at: at,
          })),
        )
        .execute();
    }
    for (const row of rows) {
      const refs = (perRun.get(row.id) ?? []).map((s) => ({
        scoreId: s.id,
        scoringId,
        grader: s.grader,
        value: s.value,
        ...(s.passed === null ? {} : { passed: s.passed }),
      }));
      const outputs = { ...row.outputs, scores: [...((row.outputs.scores as unknown[]) ?? []), ...refs] };
      await tx
        .updateTable('runs')
        .set({ outputs: json(outputs) })
        .where('id', '=', row.id)
        .execute();
    }
    await tx
      .updateTable('run_groups')
      .set({ scoring_id: scoringId, updated_at: at })
      .where('id', '=', group.id)
      .execute();
    await tx
      .insertInto('events')
      .values({
        tenant_id: tenant,
        kind: 'group.scored',
        run_id: null,
        payload: json({ groupId: group.id, scoringId, aggregate }),
        created_at: at,
      })
      .execute();
    return { scoring: (await scoringView(tx, scoringId))!, scores };
  });
}
