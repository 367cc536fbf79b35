import { describe, expect, it, vi } from 'vitest';
import { at, deepFreeze, runIn, SPECS } from '../test/fixtures.js';
import {
  applyGraders,
  evaluateGrader,
  Grader,
  type GraderInput,
  type JsonValue,
  type Judge,
  type Run,
  RunModelError,
  rescore,
  Score,
  Scoring,
  scoreGroup,
  withScores,
} from './index.js';

function settled(
  id: string,
  outputs: Partial<Run['outputs']>,
  status: 'succeeded' | 'failed' = 'succeeded',
): Run {
  const run = runIn(status, SPECS.command, id);
  return { ...run, outputs: { ...run.outputs, ...outputs } };
}

const counter = () => {
  let n = 0;
  return () => `id_${++n}`;
};

const runs = () =>
  deepFreeze([
    settled('r1', { exitCode: 0, summary: 'All 12 tests PASSED', result: { answer: 42, accuracy: 0.9 } }),
    settled(
      'r2',
      { exitCode: 1, summary: 'Tests failed: 3', result: { answer: 41, accuracy: 0.4 } },
      'failed',
    ),
    settled('r3', { summary: 'no exit code here' }),
    runIn('running', SPECS.command, 'r4'),
  ]);
const group = { id: 'g_1', runIds: ['r1', 'r2', 'r3', 'r4'] };
const graders: GraderInput[] = [
  { type: 'exit_code' },
  { type: 'output_regex', pattern: 'passed', flags: 'i' },
  { type: 'output_contains', text: 'tests', caseSensitive: false, name: 'mentions-tests' },
  { type: 'json_field_equals', path: 'outputs.result.answer', equals: 42 },
  { type: 'numeric_threshold', path: 'outputs.result.accuracy', min: 0.5 },
];

describe('deterministic graders', () => {
  const r1 = runs()[0] as Run;
  const g = (input: GraderInput) => {
    const parsed = Grader.parse(input);
    if (parsed.type === 'judge') throw new Error('judge');
    return parsed;
  };
  it('exit_code', () => {
    expect(evaluateGrader(g({ type: 'exit_code' }), r1)).toMatchObject({ value: 1, passed: true });
    expect(evaluateGrader(g({ type: 'exit_code', expected: 3 }), r1)).toMatchObject({
      value: 0,
      passed: false,
    });
    expect(evaluateGrader(g({ type: 'exit_code' }), runs()[2] as Run)).toMatchObject({
      passed: false,
      detail: 'outputs.exitCode is missing',
    });
  });
  it('output_regex and output_contains read outputs.summary by default, any field on request', () => {
    expect(evaluateGrader(g({ type: 'output_regex', pattern: '^All \\d+' }), r1).passed).toBe(true);
    expect(evaluateGrader(g({ type: 'output_regex', pattern: 'passed' }), r1).passed).toBe(false);
    expect(evaluateGrader(g({ type: 'output_contains', text: 'PASSED' }), r1).passed).toBe(true);
    expect(evaluateGrader(g({ type: 'output_contains', text: 'passed' }), r1).passed).toBe(false);
    expect(
      evaluateGrader(g({ type: 'output_contains', field: 'outputs.result', text: '"answer":42' }), r1).passed,
    ).toBe(true);
    expect(
      evaluateGrader(g({ type: 'output_contains', field: 'outputs.nothing', text: 'x' }), r1).passed,
    ).toBe(false);
  });
  it('json_field_equals compares JSON deeply', () => {
    expect(
      evaluateGrader(
        g({ type: 'json_field_equals', path: 'outputs.result', equals: { accuracy: 0.9, answer: 42 } }),
        r1,
      ).passed,
    ).toBe(true);
    expect(
      evaluateGrader(g({ type: 'json_field_equals', path: 'outputs.result', equals: { answer: 42 } }), r1)
        .passed,
    ).toBe(false);
    expect(evaluateGrader(g({ type: 'json_field_equals', path: 'kind', equals: 'command' }), r1).passed).toBe(
      true,
    );
  });
  it("json_field_equals and output_contains compare against a field of the run: each eval case's own answer", () => {
    // The case's answer key is the subject's `expected` (never handed to the harness), beside its caseSpec.
    const evalCase = (id: string, answer: { expected?: JsonValue }, result: JsonValue): Run => {
      const subject = { ...SPECS.eval.subject, caseSpec: { question: 'q' }, ...answer };
      const run = runIn('succeeded', { ...SPECS.eval, subject }, id);
      return {
        ...run,
        outputs: { ...run.outputs, result, summary: `the answer is ${JSON.stringify(result)}` },
      };
    };
    const equalsCase = g({
      type: 'json_field_equals',
      path: 'outputs.result',
      equalsPath: 'subject.expected',
    });
    expect(evaluateGrader(equalsCase, evalCase('a', { expected: { n: 4 } }, { n: 4 }))).toEqual({
      value: 1,
      passed: true,
      detail: 'outputs.result equals subject.expected {"n":4}',
    });
    expect(evaluateGrader(equalsCase, evalCase('b', { expected: { n: 5 } }, { n: 4 }))).toMatchObject({
      passed: false,
      detail: 'outputs.result differs from subject.expected {"n":5}',
    });
    // A case without the field is not a pass by accident (undefined = undefined), it is named missing.
    expect(evaluateGrader(equalsCase, evalCase('c', {}, { n: 4 }))).toEqual({
      value: 0,
      passed: false,
      detail: 'subject.expected is missing',
    });
    // null is a value like any other.
    expect(evaluateGrader(equalsCase, evalCase('d', { expected: null }, null)).passed).toBe(true);
    const containsCase = g({
      type: 'output_contains',
      textPath: 'subject.expected',
      caseSensitive: false,
    });
    expect(evaluateGrader(containsCase, evalCase('e', { expected: 'PARIS' }, 'paris')).passed).toBe(true);
    expect(evaluateGrader(containsCase, evalCase('f', { expected: 'Lyon' }, 'paris'))).toMatchObject({
      passed: false,
      detail: 'outputs.summary does not contain subject.expected "Lyon"',
    });
    expect(evaluateGrader(containsCase, evalCase('g', { expected: 42 }, 42)).passed).toBe(true); // JSON text
    // An empty expected text would be contained in anything: it is missing, never a pass.
    expect(evaluateGrader(containsCase, evalCase('h', { expected: '' }, 'x'))).toMatchObject({
      passed: false,
      detail: 'subject.expected is missing',
    });
    expect(evaluateGrader(containsCase, evalCase('i', {}, 'x')).passed).toBe(false);
  });
  it('numeric_threshold scores the number itself', () => {
    expect(
      evaluateGrader(g({ type: 'numeric_threshold', path: 'outputs.result.accuracy', min: 0.5, max: 1 }), r1),
    ).toMatchObject({ value: 0.9, passed: true });
    expect(evaluateGrader(g({ type: 'numeric_threshold', path: 'usage.costUsd', max: 0 }), r1)).toMatchObject(
      { value: 0, passed: true },
    );
    expect(evaluateGrader(g({ type: 'numeric_threshold', path: 'outputs.summary', max: 1 }), r1).passed).toBe(
      false,
    );
  });
  it('rejects malformed grader specs', () => {
    expect(Grader.safeParse({ type: 'numeric_threshold', path: 'a' }).success).toBe(false);
    expect(Grader.safeParse({ type: 'output_regex', pattern: '(' }).success).toBe(false);
    expect(Grader.safeParse({ type: 'json_field_equals', path: 'a..b', equals: 1 }).success).toBe(false);
    expect(Grader.safeParse({ type: 'vibes' }).success).toBe(false);
    // Exactly one of a value and a reference.
    expect(Grader.safeParse({ type: 'json_field_equals', path: 'a' }).success).toBe(false);
    expect(
      Grader.safeParse({ type: 'json_field_equals', path: 'a', equals: 1, equalsPath: 'b' }).success,
    ).toBe(false);
    expect(Grader.safeParse({ type: 'json_field_equals', path: 'a', equalsPath: 'b..c' }).success).toBe(
      false,
    );
    expect(Grader.safeParse({ type: 'json_field_equals', path: 'a', equals: null }).success).toBe(true);
    expect(Grader.safeParse({ type: 'output_contains' }).success).toBe(false);
    expect(Grader.safeParse({ type: 'output_contains', text: 'x', textPath: 'b' }).success).toBe(false);
    expect(Grader.safeParse({ type: 'output_contains', textPath: 'subject.caseSpec.x' }).success).toBe(true);
    expect(Grader.safeParse({ type: 'judge', judgeId: 'j_1', rubric: 'be fair' }).success).toBe(true);
  });
});

describe('applyGraders: scores on runs, an aggregate on the group', () => {
  it('scores every settled member with every grader; skips live ones; aggregates per grader', () => {
    const input = runs();
    const before = structuredClone(input);
    const { scoring, scores } = applyGraders({ group, runs: input, graders, ids: counter(), now: at(100) });
    expect(input).toEqual(before);
    expect(Scoring.parse(scoring)).toEqual(scoring);
    for (const s of scores) expect(Score.parse(s)).toEqual(s);
    expect(scoring.id).toBe('id_1');
    expect(scoring.skippedRunIds).toEqual(['r4']);
    expect(scores).toHaveLength(3 * graders.length);
    expect(new Set(scores.map((s) => s.id)).size).toBe(scores.length);
    expect(
      scores.every((s) => s.scoringId === 'id_1' && s.groupId === 'g_1' && s.rescoreOf === undefined),
    ).toBe(true);
    const byName = Object.fromEntries(scoring.aggregate.graders.map((a) => [a.grader, a]));
    expect(scoring.aggregate.runs).toBe(3);
    expect(byName.exit_code).toMatchObject({ count: 3, passed: 1, failed: 2, passRate: 1 / 3 });
    expect(byName.output_regex).toMatchObject({ passed: 1, passRate: 1 / 3 });
    expect(byName['mentions-tests']).toMatchObject({ passed: 2 });
    expect(byName.json_field_equals).toMatchObject({ passed: 1 });
    expect(byName.numeric_threshold?.mean).toBeCloseTo((0.9 + 0.4 + 0) / 3);
  });
  it('refuses non-members, duplicates, duplicate grader names, judges without a Judge', () => {
    const base = { group, runs: runs(), graders, ids: counter(), now: at(1) };
    expect(() => applyGraders({ ...base, group: { id: 'g_1', runIds: ['r1'] } })).toThrow(/not a member/);
    expect(() => applyGraders({ ...base, runs: [runs()[0] as Run, runs()[0] as Run] })).toThrow(/twice/);
    expect(() => applyGraders({ ...base, graders: [{ type: 'exit_code' }, { type: 'exit_code' }] })).toThrow(
      RunModelError,
    );
    expect(() => applyGraders({ ...base, graders: [] })).toThrow(RunModelError);
    expect(() => applyGraders({ ...base, graders: [{ type: 'judge', judgeId: 'j' }] })).toThrow(/Judge/);
  });
});

describe('re-scoring never edits phase 1', () => {
  it('makes new rows linked by rescoreOf; runs and the first scoring stay deep-equal', () => {
    const input = runs();
    const snapshot = structuredClone(input);
    const ids = counter();
    const first = deepFreeze(
      applyGraders({ group, runs: input, graders: graders.slice(0, 2), ids, now: at(10) }),
    );
    const firstCopy = structuredClone(first);
    const second = rescore(first.scoring, { group, runs: input, graders, ids, now: at(20) });
    expect(input).toEqual(snapshot);
    expect(first).toEqual(firstCopy);
    expect(second.scoring.rescoreOf).toBe(first.scoring.id);
    expect(second.scores.every((s) => s.rescoreOf === first.scoring.id)).toBe(true);
    const firstIds = new Set([first.scoring.id, ...first.scores.map((s) => s.id)]);
    expect([second.scoring.id, ...second.scores.map((s) => s.id)].some((id) => firstIds.has(id))).toBe(false);
    expect(() =>
      rescore(first.scoring, { group: { ...group, id: 'g_2' }, runs: input, graders, ids, now: at(30) }),
    ).toThrow(RunModelError);
  });
  it('withScores attaches refs to outputs.scores and leaves the rest of the run alone', () => {
    const input = runs();
    const { scores } = applyGraders({ group, runs: input, graders, ids: counter(), now: at(10) });
    const r1 = input[0] as Run;
    const scored = withScores(r1, scores);
    expect(scored.outputs.scores).toHaveLength(graders.length);
    expect({ ...scored, outputs: { ...scored.outputs, scores: [] } }).toEqual(r1);
    expect(r1.outputs.scores).toEqual([]);
  });
});

describe('scoreGroup with an injected Judge', () => {
  it('calls the judge once per settled run and judge grader, mixing with deterministic graders', async () => {
    const judge: Judge = {
      grade: vi.fn(async ({ run }) => ({
        value: run.id === 'r1' ? 0.8 : 0.2,
        passed: run.id === 'r1',
        detail: 'rubric',
      })),
    };
    const { scoring, scores } = await scoreGroup({
      group,
      runs: runs(),
      graders: [{ type: 'exit_code' }, { type: 'judge', judgeId: 'j_1', name: 'helpfulness' }],
      ids: counter(),
      now: at(5),
      judge,
    });
    expect(judge.grade).toHaveBeenCalledTimes(3);
    expect(scores.filter((s) => s.graderType === 'judge').map((s) => s.value)).toEqual([0.8, 0.2, 0.2]);
    expect(scoring.aggregate.graders[1]).toMatchObject({ grader: 'helpfulness', passed: 1, failed: 2 });
  });
  it('refuses judge graders without a judge, and non-finite verdicts', async () => {
    const input = {
      group,
      runs: runs(),
      graders: [{ type: 'judge', judgeId: 'j' }] as GraderInput[],
      ids: counter(),
      now: at(5),
    };
    await expect(scoreGroup(input)).rejects.toThrow(RunModelError);
    await expect(
      scoreGroup({ ...input, judge: { grade: async () => ({ value: Number.NaN }) } }),
    ).rejects.toThrow(/non-finite/);
  });
});
