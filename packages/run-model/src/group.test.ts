import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at, T0 } from '../test/fixtures.js';
import {
  addRuns,
  attachScoring,
  createGroup,
  isTerminalGroupStatus,
  isTerminalStatus,
  RUN_STATUSES,
  RunGroup,
  RunModelError,
  type RunStatus,
  rollupGroup,
  rollupStatus,
  type Scoring,
} from './index.js';

const base = {
  id: 'g_1',
  tenant: 't_1',
  kind: 'experiment',
  label: 'try it',
  createdBy: 'u_1',
  now: T0,
} as const;

describe('rollupStatus', () => {
  it.each([
    [[], 'queued'],
    [['queued', 'queued'], 'queued'],
    [['queued', 'running'], 'running'],
    [['queued', 'succeeded'], 'running'],
    [['running', 'awaiting_input', 'succeeded'], 'awaiting_input'],
    [['succeeded', 'succeeded'], 'succeeded'],
    [['failed'], 'failed'],
    [['cancelled', 'cancelled'], 'cancelled'],
    [['succeeded', 'failed'], 'partial'],
    [['succeeded', 'cancelled'], 'partial'],
    [['failed', 'cancelled'], 'failed'],
  ] as [RunStatus[], string][])('%j → %s', (statuses, expected) => {
    expect(rollupStatus(statuses)).toBe(expected);
  });

  const statuses = fc.array(fc.constantFrom(...RUN_STATUSES), { maxLength: 40 });
  it('property: a non-empty group is terminal iff every member is', () => {
    fc.assert(
      fc.property(
        statuses.filter((s) => s.length > 0),
        (s) => {
          expect(isTerminalGroupStatus(rollupStatus(s))).toBe(s.every(isTerminalStatus));
        },
      ),
    );
  });
  it('property: order-independent', () => {
    fc.assert(
      fc.property(statuses, fc.infiniteStream(fc.nat()), (s, rand) => {
        const shuffled = [...s];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = rand.next().value % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j] as RunStatus, shuffled[i] as RunStatus];
        }
        expect(rollupStatus(shuffled)).toBe(rollupStatus(s));
      }),
    );
  });
  it('property: any parked member parks the live group; uniform terminal groups keep the status', () => {
    fc.assert(
      fc.property(statuses, (s) => {
        if (s.includes('awaiting_input')) expect(rollupStatus(s)).toBe('awaiting_input');
        const first = s[0];
        if (first && isTerminalStatus(first) && s.every((x) => x === first))
          expect(rollupStatus(s)).toBe(first);
      }),
    );
  });
  it('property: partial means settled with at least one success and one non-success', () => {
    fc.assert(
      fc.property(statuses, (s) => {
        const partial = rollupStatus(s) === 'partial';
        const mixed =
          s.every(isTerminalStatus) && s.includes('succeeded') && s.some((x) => x !== 'succeeded');
        expect(partial).toBe(mixed);
      }),
    );
  });
});

describe('RunGroup', () => {
  it('createGroup starts queued and empty; addRuns dedupes', () => {
    const g = createGroup(base);
    expect(g).toMatchObject({ status: 'queued', runIds: [], spec: {} });
    const g2 = addRuns(g, ['r1', 'r2', 'r1'], at(1));
    expect(g2.runIds).toEqual(['r1', 'r2']);
    expect(addRuns(g2, ['r2'], at(2)).updatedAt).toBe(at(1));
    expect(g.runIds).toEqual([]);
  });
  it('rejects duplicate members and unknown kinds', () => {
    expect(RunGroup.safeParse({ ...createGroup(base), runIds: ['a', 'a'] }).success).toBe(false);
    expect(() => createGroup({ ...base, kind: 'pipeline' as never })).toThrow(RunModelError);
  });
  it('rollupGroup reads every member and stamps updatedAt only on change', () => {
    const g = addRuns(createGroup(base), ['r1', 'r2'], at(1));
    const running = rollupGroup(
      g,
      [
        { id: 'r1', status: 'running' },
        { id: 'r2', status: 'queued' },
      ],
      at(2),
    );
    expect(running).toMatchObject({ status: 'running', updatedAt: at(2) });
    expect(
      rollupGroup(
        running,
        [
          { id: 'r1', status: 'running' },
          { id: 'r2', status: 'running' },
        ],
        at(3),
      ).updatedAt,
    ).toBe(at(2));
    expect(() => rollupGroup(g, [{ id: 'r1', status: 'running' }], at(2))).toThrow(/missing/);
  });
  it('attachScoring promotes an experiment to a scorecard and keeps the lineage', () => {
    const g = addRuns(createGroup(base), ['r1'], at(1));
    const scoring: Scoring = {
      id: 'sc_2',
      groupId: 'g_1',
      graders: [{ type: 'exit_code', expected: 0 }],
      aggregate: { runs: 1, graders: [] },
      skippedRunIds: [],
      rescoreOf: 'sc_1',
      createdAt: at(5),
    };
    const scored = attachScoring(g, scoring);
    expect(scored).toMatchObject({
      kind: 'scorecard',
      scoring: { scoringId: 'sc_2', rescoreOf: 'sc_1', scoredAt: at(5) },
    });
    expect(RunGroup.safeParse(scored).success).toBe(true);
    expect(g.kind).toBe('experiment');
    expect(RunGroup.safeParse({ ...scored, kind: 'experiment' }).success).toBe(false);
    expect(() => attachScoring(g, { ...scoring, groupId: 'other' })).toThrow(RunModelError);
  });
});
