import { describe, expect, it } from 'vitest';
import { at, queuedRun, runIn, SPECS, T0 } from '../test/fixtures.js';
import {
  createRun,
  defaultRunClass,
  isKind,
  KindedSubject,
  Origin,
  Run,
  RunModelError,
  RunSpec,
  RunTemplate,
  subjectOf,
} from './index.js';

const ctx = { id: 'run_9', tenant: 't_1', createdBy: 'u_1', now: T0 };

describe('subjects: the five known kinds are strict', () => {
  const bad: Record<keyof typeof SPECS, unknown[]> = {
    eval: [
      { harness: { id: 'h' }, caseId: 'c' },
      { harness: { id: 'h', version: '1' } },
      { harness: { id: 'h', version: '1' }, caseId: 'c', extra: 1 },
    ],
    agent: [
      { agentId: 'a', agentVersion: '1' },
      { agentId: 'a', agentVersion: '1', permissionMode: 'yolo' },
    ],
    command: [
      { path: 'a', image: 'i', command: [] },
      { path: 'a', image: 'i', command: 'ls' },
      { image: 'i' },
      { command: ['ls'], image: '' },
      { command: ['ls'], extra: 1 },
    ],
    sandbox: [
      { image: '' },
      { image: 'i', source: { type: 'git', url: 'x' } },
      { image: 'i', source: { type: 'run' } },
    ],
    analysis: [{}, { viewId: 'v', config: {} }, { config: 'x' }],
  };
  for (const [kind, spec] of Object.entries(SPECS)) {
    it(`${kind}: accepts its subject`, () => {
      const parsed = RunSpec.parse(spec);
      expect(parsed.kind).toBe(kind);
      expect(parsed.subject).toEqual(spec.subject);
    });
    it(`${kind}: rejects malformed subjects, pointing at subject.*`, () => {
      for (const subject of bad[kind as keyof typeof SPECS]) {
        const r = RunSpec.safeParse({ ...spec, subject });
        expect(r.success, JSON.stringify(subject)).toBe(false);
        expect(r.error?.issues.every((i) => i.path[0] === 'subject')).toBe(true);
      }
    });
  }

  it('analysis accepts an inline config instead of a view', () => {
    expect(RunSpec.parse({ ...SPECS.analysis, subject: { config: { lens: 'cost', days: 7 } } }).kind).toBe(
      'analysis',
    );
  });

  it('eval carries its answer key beside the case: any JSON value, kept exactly', () => {
    for (const expected of [{ sum: 4 }, 'Paris', 42, null, [1, 'two']]) {
      const subject = { ...SPECS.eval.subject, caseSpec: { a: 2 }, expected };
      expect(RunSpec.parse({ ...SPECS.eval, subject }).subject).toEqual(subject);
    }
    const notJson = { ...SPECS.eval.subject, expected: Number.NaN };
    expect(RunSpec.safeParse({ ...SPECS.eval, subject: notJson }).success).toBe(false);
  });

  it('sandbox accepts each source: environment, harness, run', () => {
    for (const source of [
      { type: 'environment', environmentId: 'e', version: '2' },
      { type: 'harness', harness: { id: 'h', version: '1' } },
      { type: 'run', runId: 'r' },
    ]) {
      expect(RunSpec.safeParse({ ...SPECS.sandbox, subject: { image: 'i', source } }).success).toBe(true);
    }
  });
});

describe('subjects: open kinds', () => {
  it('a new kind parses with any JSON-object subject', () => {
    const spec = { ...SPECS.eval, kind: 'notebook', subject: { notebookId: 'nb_1', cells: [1, 2] } };
    const run = createRun(spec, ctx).run;
    expect(run.kind).toBe('notebook');
    expect(run.subject).toEqual(spec.subject);
    expect(Run.parse(run)).toEqual(run);
  });
  it('an open kind still needs an object subject and a well-formed kind', () => {
    expect(KindedSubject.safeParse({ kind: 'notebook', subject: 'x' }).success).toBe(false);
    expect(KindedSubject.safeParse({ kind: 'notebook', subject: { f: () => 1 } }).success).toBe(false);
    expect(KindedSubject.safeParse({ kind: 'Not A Kind', subject: {} }).success).toBe(false);
    expect(KindedSubject.safeParse({ kind: 'notebook', subject: {} }).success).toBe(true);
  });
  it('a known kind never falls back to the open schema', () => {
    expect(KindedSubject.safeParse({ kind: 'eval', subject: { anything: true } }).success).toBe(false);
  });
  it('isKind and subjectOf narrow to the typed subject', () => {
    const run = queuedRun(SPECS.agent);
    expect(isKind(run, 'agent') && run.subject.agentId).toBe('ag_1');
    expect(subjectOf(run, 'agent')?.permissionMode).toBe('ask');
    expect(subjectOf(run, 'eval')).toBeUndefined();
  });
});

describe('origin: each cause names its fact', () => {
  it.each([
    [{ cause: 'member' }, 'actor'],
    [{ cause: 'schedule' }, 'scheduleId'],
    [{ cause: 'event', eventId: 'e' }, 'eventKind'],
    [{ cause: 'run' }, 'causedByRunId'],
  ])('%j needs %s', (origin, field) => {
    const r = Origin.safeParse(origin);
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path[0])).toContain(field);
  });
  it('ci and api need nothing else; unknown causes are refused', () => {
    expect(Origin.safeParse({ cause: 'ci' }).success).toBe(true);
    expect(Origin.safeParse({ cause: 'api' }).success).toBe(true);
    expect(Origin.safeParse({ cause: 'cron' }).success).toBe(false);
    expect(Origin.safeParse({ cause: 'run', causedByRunId: 'r', eventKind: 'not-dotted' }).success).toBe(
      false,
    );
  });
});

describe('RunSpec and createRun', () => {
  it('defaults lifetime task and attach [], and is born queued with a run.queued fact', () => {
    const { run, facts } = createRun(SPECS.eval, ctx);
    expect(run).toMatchObject({ status: 'queued', lifetime: 'task', attach: [], class: 'interactive' });
    expect(run.outputs).toEqual({ artifacts: [], files: [], scores: [] });
    expect(run.usage.costUsd).toBe(0);
    expect(facts).toEqual([
      {
        type: 'run.queued',
        runId: 'run_9',
        tenant: 't_1',
        kind: 'eval',
        at: T0,
        cause: 'member',
        class: 'interactive',
        lifetime: 'task',
      },
    ]);
  });
  it('a session needs a hard expiresAt in the future', () => {
    const { expiresAt: _, ...noExpiry } = SPECS.sandbox;
    expect(RunSpec.safeParse(noExpiry).success).toBe(false);
    expect(() => createRun({ ...SPECS.sandbox, expiresAt: T0 }, ctx)).toThrow(RunModelError);
    expect(createRun(SPECS.sandbox, ctx).run.expiresAt).toBe(at(900));
  });
  it('class: spec wins, then admission, then the default', () => {
    expect(createRun({ ...SPECS.eval, class: 'batch' }, { ...ctx, class: 'background' }).run.class).toBe(
      'batch',
    );
    expect(createRun(SPECS.eval, { ...ctx, class: 'background' }).run.class).toBe('background');
    expect(defaultRunClass(RunSpec.parse(SPECS.agent))).toBe('background');
    expect(
      defaultRunClass({ origin: { cause: 'member', actor: 'u' }, group: { id: 'g', role: 'case' } }),
    ).toBe('batch');
  });
  it('stamps the causal edge onto run.queued', () => {
    const spec = { ...SPECS.eval, origin: { cause: 'run', causedByRunId: 'run_0' } } as const;
    expect(createRun(spec, ctx).facts[0]).toMatchObject({
      cause: 'run',
      causedByRunId: 'run_0',
      class: 'background',
    });
  });
  it('refuses a bad spec with a typed invalid_input (400) listing issues', () => {
    try {
      createRun({ ...SPECS.eval, placement: { where: 'moon' } } as never, ctx);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RunModelError);
      expect((e as RunModelError).code).toBe('invalid_input');
      expect((e as RunModelError).httpStatus).toBe(400);
      expect((e as RunModelError).issues).toBeInstanceOf(Array);
    }
  });
  it('rejects unknown top-level fields', () => {
    expect(RunSpec.safeParse({ ...SPECS.eval, colour: 'red' }).success).toBe(false);
  });
  it('an envelope in-flight cap is a positive integer', () => {
    for (const inFlightCap of [0, -1, 1.5]) {
      const spec = { ...SPECS.eval, envelope: { id: 'env_1', inFlightCap } };
      expect(RunSpec.safeParse(spec).success, String(inFlightCap)).toBe(false);
    }
  });
  it('carries group, lineage and envelope through', () => {
    const spec = {
      ...SPECS.eval,
      group: { id: 'g_1', role: 'case' },
      lineage: { retryOf: 'run_0' },
      envelope: { id: 'env_1', capUsd: 2.5, capTokens: 10_000, capRuns: 20, inFlightCap: 4 },
    } as const;
    expect(createRun(spec, ctx).run).toMatchObject({
      group: spec.group,
      lineage: spec.lineage,
      envelope: spec.envelope,
      class: 'batch',
    });
  });
});

describe('Run record invariants', () => {
  it('every status reached through the machine parses', () => {
    for (const s of ['queued', 'running', 'awaiting_input', 'succeeded', 'failed', 'cancelled'] as const) {
      for (const spec of Object.values(SPECS)) expect(Run.safeParse(runIn(s, spec)).success).toBe(true);
    }
  });
  it('failed needs an error; settledAt iff terminal; started runs carry startedAt', () => {
    const { error: _e, ...failedNoError } = runIn('failed');
    expect(Run.safeParse(failedNoError).success).toBe(false);
    const { settledAt: _s, ...succeededNoSettle } = runIn('succeeded');
    expect(Run.safeParse(succeededNoSettle).success).toBe(false);
    expect(Run.safeParse({ ...runIn('running'), settledAt: at(3) }).success).toBe(false);
    const { startedAt: _t, ...runningNoStart } = runIn('running');
    expect(Run.safeParse(runningNoStart).success).toBe(false);
    expect(Run.safeParse({ ...runIn('queued'), updatedAt: '2025-01-01T00:00:00Z' }).success).toBe(false);
  });
  it('accepts outputs, trajectory ref and usage', () => {
    const run = {
      ...runIn('succeeded'),
      trajectory: { ref: 'traj/t_1/run_1', eventCount: 12, sealedAt: at(2) },
      outputs: {
        artifacts: [{ name: 'report.html', uri: 's3://b/report.html', bytes: 10 }],
        files: [{ path: 'out/result.json', revision: 'rev_3' }],
        scores: [{ scoreId: 's_1', scoringId: 'sc_1', grader: 'exit_code', value: 1, passed: true }],
        summary: 'ok',
        exitCode: 0,
        result: { answer: 42 },
      },
      usage: {
        inputTokens: 10,
        outputTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0.001,
        llmCalls: 1,
      },
    };
    expect(Run.parse(run)).toEqual(run);
    expect(Run.safeParse({ ...run, usage: { ...run.usage, inputTokens: 1.5 } }).success).toBe(false);
  });
});

describe('attach is a set of channels', () => {
  it('a spec or template refuses a repeated channel and more channels than exist', () => {
    const many = Array.from({ length: 10_000 }, () => 'logs');
    for (const attach of [['logs', 'logs'], ['exec', 'terminal', 'exec'], many]) {
      expect(RunSpec.safeParse({ ...SPECS.command, attach }).success, attach.join()).toBe(false);
      const { origin: _o, ...template } = SPECS.command;
      expect(RunTemplate.safeParse({ ...template, attach }).success).toBe(false);
    }
    const all = ['logs', 'exec', 'terminal', 'screen', 'cdp'];
    expect(RunSpec.parse({ ...SPECS.command, attach: all }).attach).toEqual(all);
    expect(() => createRun({ ...SPECS.command, attach: ['logs', 'logs'] }, ctx)).toThrow(
      expect.objectContaining({ code: 'invalid_input', httpStatus: 400 }),
    );
  });
});
