// Phase 2 reads phase 1 only: verdicts never depend on earlier scorings' refs, a Judge cannot edit the
// caller's runs, and only runs with evidence (succeeded / failed) are graded — every other member is listed.
import { describe, expect, it } from 'vitest';
import { at, runIn, SPECS } from '../test/fixtures.js';
import {
  applyGraders,
  evaluateGrader,
  Grader,
  type GraderInput,
  type Judge,
  type Run,
  rescore,
  rescoreGroup,
  scoreGroup,
  withScores,
} from './index.js';

const counter = () => {
  let n = 0;
  return () => `id_${++n}`;
};

function settled(id: string, status: 'succeeded' | 'failed', exitCode: number): Run {
  const run = runIn(status, SPECS.command, id);
  return { ...run, outputs: { ...run.outputs, exitCode, summary: `exit ${exitCode}` } };
}

describe('phase 2 reads phase 1 only', () => {
  it('a re-score with the same graders gives the same verdicts after the first scores were attached', () => {
    const group = { id: 'g_1', runIds: ['r1', 'r2'] };
    const graders: GraderInput[] = [
      { type: 'exit_code' },
      // Reads the whole outputs object: it must not see the refs a scoring attached.
      { type: 'output_contains', field: 'outputs', text: 'exit_code', name: 'mentions' },
      { type: 'numeric_threshold', path: 'outputs.scores.length', max: 0, name: 'no-refs' },
    ];
    const runs = [settled('r1', 'succeeded', 0), settled('r2', 'failed', 1)];
    const ids = counter();
    const first = applyGraders({ group, runs, graders, ids, now: at(10) });
    const scoredRuns = runs.map((r) => withScores(r, first.scores));
    expect(scoredRuns[0]?.outputs.scores.length).toBe(graders.length);
    const second = rescore(first.scoring, { group, runs: scoredRuns, graders, ids, now: at(20) });
    const verdicts = (s: typeof first) => s.scores.map((x) => [x.runId, x.grader, x.value, x.passed]);
    expect(verdicts(second)).toEqual(verdicts(first));
    expect(second.scoring.aggregate.graders).toEqual(first.scoring.aggregate.graders);
  });

  it('a Judge gets a frozen copy without score refs: it cannot edit the caller run', async () => {
    const run = withScores(settled('r1', 'succeeded', 0), [
      {
        id: 's0',
        scoringId: 'sc0',
        runId: 'r1',
        groupId: 'g_1',
        grader: 'old',
        graderType: 'exit_code',
        value: 1,
        passed: true,
        detail: '',
        createdAt: at(5),
      },
    ]);
    const before = structuredClone(run);
    const seen: number[] = [];
    const judge: Judge = {
      async grade({ run: r }) {
        seen.push(r.outputs.scores.length);
        try {
          (r.outputs as { summary?: string }).summary = 'tampered';
          r.outputs.scores.push({ scoreId: 'x', scoringId: 'x', grader: 'x', value: 0 });
        } catch {
          // frozen: the write is refused
        }
        return { value: 1, passed: true };
      },
    };
    await scoreGroup({
      group: { id: 'g_1', runIds: ['r1'] },
      runs: [run],
      graders: [{ type: 'judge', judgeId: 'j' }],
      ids: counter(),
      now: at(10),
      judge,
    });
    expect(seen).toEqual([0]);
    expect(run).toEqual(before);
  });
});

describe('only runs with evidence are graded; every other member is listed as skipped', () => {
  it('a cancelled run gets no verdict and does not lower the pass rate; a member not handed in is listed', () => {
    const cancelled = runIn('cancelled', SPECS.command, 'r3');
    const group = { id: 'g_1', runIds: ['r1', 'r2', 'r3', 'r4'] };
    const { scoring, scores } = applyGraders({
      group,
      runs: [settled('r1', 'succeeded', 0), settled('r2', 'succeeded', 0), cancelled],
      graders: [{ type: 'exit_code' }],
      ids: counter(),
      now: at(10),
    });
    expect(scores.map((s) => s.runId)).toEqual(['r1', 'r2']);
    expect(scoring.aggregate.runs).toBe(2);
    expect(scoring.aggregate.graders[0]).toMatchObject({ count: 2, passed: 2, failed: 0, passRate: 1 });
    expect([...scoring.skippedRunIds].sort()).toEqual(['r3', 'r4']);
  });
});

describe('graders read fields of the record, not of its prototype', () => {
  it('constructor, __proto__ and toString are missing, not passes', () => {
    const run = settled('r1', 'succeeded', 0);
    for (const path of ['outputs.constructor.name', 'constructor.name', 'outputs.toString']) {
      const g = Grader.parse({ type: 'json_field_equals', path, equals: 'Object' });
      if (g.type === 'judge') throw new Error('judge');
      expect(evaluateGrader(g, run)).toMatchObject({ passed: false, detail: `${path} is missing` });
    }
    const len = Grader.parse({ type: 'numeric_threshold', path: 'outputs.artifacts.length', max: 0 });
    if (len.type === 'judge') throw new Error('judge');
    expect(evaluateGrader(len, run)).toMatchObject({ value: 0, passed: true });
  });
});

describe('re-scoring with a different judge', () => {
  it('rescoreGroup applies judge graders, links rescoreOf, and refuses another group', async () => {
    const group = { id: 'g_1', runIds: ['r1'] };
    const runs = [settled('r1', 'succeeded', 0)];
    const first = applyGraders({
      group,
      runs,
      graders: [{ type: 'exit_code' }],
      ids: counter(),
      now: at(10),
    });
    const judge: Judge = { grade: async () => ({ value: 0.7, passed: true, detail: 'ok' }) };
    const again = await rescoreGroup(first.scoring, {
      group,
      runs,
      graders: [{ type: 'judge', judgeId: 'j_2', name: 'second-opinion' }],
      ids: counter(),
      now: at(20),
      judge,
    });
    expect(again.scoring.rescoreOf).toBe(first.scoring.id);
    expect(again.scores.map((s) => [s.grader, s.value, s.rescoreOf])).toEqual([
      ['second-opinion', 0.7, first.scoring.id],
    ]);
    await expect(
      rescoreGroup(first.scoring, {
        group: { id: 'g_2', runIds: ['r1'] },
        runs,
        graders: [{ type: 'exit_code' }],
        ids: counter(),
        now: at(30),
      }),
    ).rejects.toThrow(/belongs to group/);
  });
});
