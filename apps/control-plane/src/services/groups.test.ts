import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore();
});
afterAll(async () => {
  await t.close();
});

describe('groups: fan-out, rollup, score, promote', () => {
  it('runs an experiment over cases, scores it, re-scores it and promotes it to a scorecard', async () => {
    const { group, runs } = await t.core.services.groups.create(t.admin, {
      kind: 'experiment',
      label: 'echo cases',
      spec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'ok' } } },
      cases: [{ n: 1 }, { n: 2 }, { n: 3 }],
    });
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.group?.id === group.id && r.class === 'batch')).toBe(true);
    const done = await eventually(async () => {
      const g = await t.core.services.groups.get(t.admin, group.id);
      return g.rollup.status === 'succeeded' ? g : undefined;
    });
    expect(done.rollup).toMatchObject({ total: 3, byStatus: { succeeded: 3 } });
    const first = await t.core.services.groups.score(t.admin, group.id, {
      graders: [{ name: 'ok', type: 'status' }],
    });
    expect(first.scores).toHaveLength(3);
    expect(first.scoring.aggregate.ok).toMatchObject({ passRate: 1, n: 3 });
    const again = await t.core.services.groups.score(t.admin, group.id, {
      graders: [{ name: 'says-ok', type: 'output_contains', config: { substring: 'ok' } }],
      rescoreOf: first.scoring.id,
    });
    expect(again.scoring.rescoreOf).toBe(first.scoring.id);
    const run = await t.core.services.runs.get(t.admin, runs[0]!.id);
    expect(run.outputs.scores.map((s) => s.grader)).toEqual(['ok', 'says-ok']);
    const card = await t.core.services.groups.promote(t.admin, group.id, {
      graders: [{ name: 'ok', type: 'status' }],
    });
    expect(card.kind).toBe('scorecard');
    await expect(
      t.core.services.groups.promote(t.admin, group.id, { graders: [{ name: 'ok', type: 'status' }] }),
    ).rejects.toMatchObject({ httpStatus: 409 });
  });

  it('creates a batch of N runs of one spec, all-or-nothing under the queue cap', async () => {
    const { runs } = await t.core.services.groups.create(t.admin, {
      kind: 'batch',
      spec: { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } },
      repeat: 4,
    });
    expect(runs).toHaveLength(4);
    const list = await t.core.services.groups.list(t.admin, { kind: 'batch' });
    expect(list.items).toHaveLength(1);
  });
});
