import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { scriptedJudge } from './judge.js';

let t: TestCore;
let bare: TestCore; // no Judge configured
beforeAll(async () => {
  t = await testCore({
    judge: scriptedJudge({
      strict: ({ run }) => ({ value: run.outputs.exitCode === 0 ? 1 : 0 }),
      lenient: { value: 1, passed: true },
    }),
  });
  bare = await testCore({ scheduler: { enabled: false } });
});
afterAll(async () => {
  await t.close();
  await bare.close();
});

const settledGroup = (id: string) =>
  eventually(async () => {
    const g = await t.core.services.groups.get(t.admin, id);
    return ['succeeded', 'failed', 'partial', 'cancelled'].includes(g.rollup.status) ? g : undefined;
  });

describe('groups: fan-out, rollup, score, promote', () => {
  it("an eval dataset: each case is the harness's caseSpec, its expected the subject's answer key beside it", async () => {
    const { runs } = await bare.core.services.groups.create(bare.admin, {
      kind: 'experiment',
      spec: { kind: 'eval', subject: { harness: { id: 'adder', version: '1' }, caseId: 'x' } },
      cases: [
        { id: 'a', a: 2, b: 2, expected: { sum: 4 } },
        { caseId: 'b', a: 1, expected: null },
        { id: 'c', a: 5 },
      ],
    });
    expect(runs.map((r) => r.subject)).toEqual([
      {
        harness: { id: 'adder', version: '1' },
        caseId: 'a',
        caseSpec: { id: 'a', a: 2, b: 2 },
        expected: { sum: 4 },
      },
      {
        harness: { id: 'adder', version: '1' },
        caseId: 'b',
        caseSpec: { caseId: 'b', a: 1 },
        expected: null,
      },
      { harness: { id: 'adder', version: '1' }, caseId: 'c', caseSpec: { id: 'c', a: 5 } },
    ]);
    // As stored, not only as answered.
    const stored = await bare.core.services.runs.get(bare.admin, runs[0]!.id);
    expect(stored.subject).toEqual(runs[0]!.subject);
  });

  it("sums what its runs used: run-model's addUsage over each run's reported usage, CPU time beside it", async () => {
    const { group, runs } = await bare.core.services.groups.create(bare.admin, {
      kind: 'batch',
      label: 'usage',
      spec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
      repeat: 3,
    });
    expect(group.rollup.usage).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
      llmCalls: 0,
      cpuTimeMs: 0,
    });
    // The usages executors leave: an eval's traced model calls with its CPU time, an agent turn's calls, and a
    // run that reported nothing.
    const reported = [
      { inputTokens: 120, outputTokens: 30, cacheReadTokens: 7, costUsd: 0.25, llmCalls: 1, cpuTimeMs: 40.5 },
      { inputTokens: 80, outputTokens: 12, cacheWriteTokens: 3, costUsd: 0.5, llmCalls: 2 },
      {},
    ];
    const db = bare.core.internals.deps.db;
    for (const [i, usage] of reported.entries())
      await db
        .updateTable('runs')
        .set({ usage: JSON.stringify(usage) })
        .where('id', '=', runs[i]!.id)
        .execute();
    const read = await bare.core.services.groups.get(bare.admin, group.id);
    expect(read.rollup.usage).toEqual({
      inputTokens: 200,
      outputTokens: 42,
      cacheReadTokens: 7,
      cacheWriteTokens: 3,
      costUsd: 0.75,
      llmCalls: 3,
      cpuTimeMs: 40.5,
    });
  });

  it("scores with run-model's graders: scores on runs, the aggregate on the group", async () => {
    const { group, runs } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      label: 'echo cases',
      spec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'ok 42', value: 42 } } },
      cases: [{ n: 1 }, { n: 2 }, { n: 3 }],
    });
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.group?.id === group.id && r.class === 'batch')).toBe(true);
    const done = await settledGroup(group.id);
    expect(done.rollup).toMatchObject({ total: 3, byStatus: { succeeded: 3 }, status: 'succeeded' });
    const { scoring, scores } = await t.core.services.groups.score(t.admin, group.id, {
      graders: [
        { type: 'exit_code' },
        { type: 'output_regex', pattern: '^ok \\d+$' },
        { type: 'output_contains', name: 'says-ok', text: 'OK', caseSensitive: false },
        { type: 'json_field_equals', path: 'outputs.result', equals: 42 },
        { type: 'numeric_threshold', path: 'outputs.result', min: 40, max: 41 },
      ],
    });
    expect(scores).toHaveLength(15);
    expect(scoring.skippedRunIds).toEqual([]);
    expect(scoring.aggregate.runs).toBe(3);
    const rates = Object.fromEntries(scoring.aggregate.graders.map((g) => [g.grader, g.passRate]));
    expect(rates).toEqual({
      exit_code: 1,
      output_regex: 1,
      'says-ok': 1,
      json_field_equals: 1,
      numeric_threshold: 0,
    });
    expect(scoring.aggregate.graders.find((g) => g.grader === 'numeric_threshold')?.mean).toBe(42);
    const g = await t.core.services.groups.get(t.admin, group.id);
    expect(g.scoring).toEqual(scoring);
    const run = await t.core.services.runs.get(t.admin, runs[0]!.id);
    expect(run.outputs.scores).toHaveLength(5);
    expect(run.outputs.scores[0]).toMatchObject({ scoringId: scoring.id, grader: 'exit_code', value: 1 });
  });

  it('re-scores by rescoreOf with a judge; phase 1 and the first scores are never edited', async () => {
    const { group } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      spec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'hello world' } } },
      repeat: 2,
    });
    await settledGroup(group.id);
    const first = await t.core.services.groups.score(t.admin, group.id, { graders: [{ type: 'exit_code' }] });
    const before = await t.core.services.runs.list(t.admin, { groupId: group.id });
    const again = await t.core.services.groups.score(t.admin, group.id, {
      graders: [
        { type: 'judge', name: 'mentions', judgeId: 'keywords', rubric: 'hello planet' },
        { type: 'judge', name: 'strict', judgeId: 'strict' },
      ],
      rescoreOf: first.scoring.id,
    });
    expect(again.scoring.rescoreOf).toBe(first.scoring.id);
    expect(again.scores.every((s) => s.rescoreOf === first.scoring.id)).toBe(true);
    const mentions = again.scoring.aggregate.graders.find((a) => a.grader === 'mentions');
    expect(mentions).toMatchObject({ graderType: 'judge', mean: 0.5, passRate: 1 });
    expect(again.scores[0]?.detail).toBe('found 1/2 rubric words: hello');
    const after = await t.core.services.runs.list(t.admin, { groupId: group.id });
    for (const run of after.items) {
      const prior = before.items.find((r) => r.id === run.id)!;
      const { scores: s1, ...phase1After } = run.outputs;
      const { scores: s0, ...phase1Before } = prior.outputs;
      expect(phase1After).toEqual(phase1Before);
      expect({ ...run, outputs: null, updatedAt: null }).toEqual({
        ...prior,
        outputs: null,
        updatedAt: null,
      });
      expect(s1.slice(0, s0.length)).toEqual(s0); // earlier refs untouched, new ones appended
      expect(s1.map((s) => s.grader)).toEqual(['exit_code', 'mentions', 'strict']);
    }
    const group2 = await t.core.services.groups.get(t.admin, group.id);
    expect(group2.scoring?.id).toBe(again.scoring.id);
    await expect(
      t.core.services.groups.score(t.admin, group.id, {
        graders: [{ type: 'exit_code' }],
        rescoreOf: 'scoring_x',
      }),
    ).rejects.toMatchObject({ httpStatus: 404 });
    await expect(
      t.core.services.groups.score(t.admin, group.id, {
        graders: [{ type: 'judge', judgeId: 'nobody-knows' }],
      }),
    ).rejects.toMatchObject({ httpStatus: 400, details: { judgeId: 'nobody-knows' } });
  });

  it('lists unsettled members as skipped, and refuses bad or unknown graders with a 400', async () => {
    const { group } = await t.core.services.groups.create(t.admin, {
      kind: 'batch',
      spec: { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } },
      repeat: 2,
    });
    const { scoring, scores } = await t.core.services.groups.score(t.admin, group.id, {
      graders: [{ type: 'exit_code' }],
    });
    expect(scores).toEqual([]);
    expect(scoring.skippedRunIds).toHaveLength(2);
    for (const graders of [
      [{ type: 'status' }],
      [{ type: 'numeric_threshold', path: 'outputs.result' }],
      [{ type: 'output_regex', pattern: '(' }],
      [{ type: 'exit_code' }, { type: 'exit_code' }],
      [],
    ]) {
      // A schema refusal, as the edge answers one: validation_failed naming the body's `graders`.
      await expect(
        t.core.services.groups.score(t.admin, group.id, { graders } as never),
      ).rejects.toMatchObject({
        httpStatus: 400,
        code: 'validation_failed',
        issues: expect.arrayContaining([
          expect.objectContaining({ path: expect.arrayContaining(['graders']), in: 'body' }),
        ]),
      });
    }
  });

  it('refuses a judge grader without a configured Judge: 400 judge_unavailable, nothing saved', async () => {
    const { group } = await bare.core.services.groups.create(bare.admin, {
      kind: 'experiment',
      spec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
      repeat: 1,
    });
    await expect(
      bare.core.services.groups.score(bare.admin, group.id, {
        graders: [{ type: 'judge', judgeId: 'keywords', rubric: 'x' }],
      }),
    ).rejects.toMatchObject({ httpStatus: 400, code: 'judge_unavailable' });
    expect((await bare.core.services.groups.get(bare.admin, group.id)).scoring).toBeNull();
  });

  it('promotes an experiment to a scorecard (re-scoring the last scoring), only once', async () => {
    const { group } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      spec: { kind: 'analysis', subject: { config: { fn: 'fail' } } },
      repeat: 2,
    });
    expect((await settledGroup(group.id)).rollup.status).toBe('failed');
    const first = await t.core.services.groups.score(t.admin, group.id, { graders: [{ type: 'exit_code' }] });
    expect(first.scoring.aggregate.graders[0]).toMatchObject({ passRate: 0, failed: 2 });
    const card = await t.core.services.groups.promote(t.admin, group.id, {
      graders: [{ type: 'exit_code', expected: 1 }],
    });
    expect(card.kind).toBe('scorecard');
    expect(card.scoring).toMatchObject({ rescoreOf: first.scoring.id });
    expect(card.scoring?.aggregate.graders[0]?.passRate).toBe(1);
    await expect(
      t.core.services.groups.promote(t.admin, group.id, { graders: [{ type: 'exit_code' }] }),
    ).rejects.toMatchObject({ httpStatus: 409 });
  });

  it('gives a cancelled member no verdict: not judged, counted neither passed nor failed, listed as skipped', async () => {
    const { group, runs } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      spec: { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } },
      repeat: 2,
    });
    for (const r of runs) await t.core.services.runs.cancel(t.admin, r.id);
    const { run: ran } = await t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'echo', message: 'ok' } },
      group: { id: group.id, role: 'case' },
    });
    expect((await settledGroup(group.id)).rollup.byStatus).toEqual({ cancelled: 2, succeeded: 1 });
    const { scoring, scores } = await t.core.services.groups.score(t.admin, group.id, {
      graders: [{ type: 'exit_code' }, { type: 'judge', name: 'lenient', judgeId: 'lenient' }],
    });
    expect(scores.map((s) => s.runId)).toEqual([ran.id, ran.id]);
    expect(scoring.aggregate.runs).toBe(1);
    for (const g of scoring.aggregate.graders) expect(g).toMatchObject({ count: 1, passed: 1, failed: 0 });
    expect(scoring.skippedRunIds).toEqual(runs.map((r) => r.id).sort());
    for (const r of runs) expect((await t.core.services.runs.get(t.admin, r.id)).outputs.scores).toEqual([]);
  });

  it('promotes once under concurrent promotions: one scorecard, one scoring, the others a 409', async () => {
    const { group } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      spec: { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } },
      repeat: 1,
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map(() =>
        t.core.services.groups.promote(t.admin, group.id, { graders: [{ type: 'exit_code' }] }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r) => r.status === 'rejected'))
      expect(r.reason).toMatchObject({ httpStatus: 409, code: 'conflict' });
    const scorings = await t.core.internals.deps.db
      .selectFrom('scorings')
      .select('id')
      .where('group_id', '=', group.id)
      .execute();
    expect(scorings).toHaveLength(1);
    const card = await t.core.services.groups.get(t.admin, group.id);
    expect(card).toMatchObject({ kind: 'scorecard', scoring: { id: scorings[0]!.id } });
  });

  it('creates a batch of N runs of one spec, all-or-nothing under the queue cap', async () => {
    const { group, runs } = await t.core.services.groups.create(t.admin, {
      kind: 'batch',
      spec: { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } },
      repeat: 4,
    });
    expect(runs).toHaveLength(4);
    const list = await t.core.services.groups.list(t.admin, { kind: 'batch' });
    // Exactly the tenant's batch groups in the ledger, this one among them.
    const stored = await t.core.internals.deps.db
      .selectFrom('run_groups')
      .select('id')
      .where('tenant_id', '=', t.admin.tenantId)
      .where('kind', '=', 'batch')
      .execute();
    expect(list.items.map((g) => g.id).sort()).toEqual(stored.map((g) => g.id).sort());
    expect(list.items.filter((g) => g.id === group.id)).toHaveLength(1);
  });
});
