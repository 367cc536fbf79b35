import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at } from '../test/fixtures.js';
import { isExtension, TraceEvent, type TraceEventInput, Trajectory, usageFromTrace } from './index.js';

const b = (seq: number) => ({ seq, ts: at(seq), runId: 'run_1' });

const transcript: TraceEventInput[] = [
  { type: 'message', ...b(0), role: 'user', content: 'fix the flaky test' },
  {
    type: 'llm_call',
    ...b(1),
    model: 'm-1',
    inputTokens: 1200,
    outputTokens: 300,
    cacheReadTokens: 800,
    costUsd: 0.0123,
  },
  { type: 'tool_call', ...b(2), callId: 'c1', tool: 'write_file', input: { path: 'a.ts', text: 'x' } },
  {
    type: 'extension',
    ...b(3),
    ext: 'approval',
    data: { requestId: 'ap_1', decision: 'requested', tool: 'write_file', callId: 'c1' },
  },
  {
    type: 'extension',
    ...b(4),
    ext: 'approval',
    data: { requestId: 'ap_1', decision: 'approved', by: 'u_1' },
  },
  { type: 'tool_result', ...b(5), callId: 'c1', output: 'ok' },
  { type: 'extension', ...b(6), ext: 'todo', data: { items: [{ id: 't1', text: 'fix', status: 'done' }] } },
  {
    type: 'extension',
    ...b(7),
    ext: 'subagent',
    data: { action: 'spawned', agentId: 'ag_2', childRunId: 'run_2' },
  },
  { type: 'extension', ...b(8), ext: 'acme/review', data: { verdict: 'lgtm', lines: [1, 2] } },
  { type: 'log', ...b(9), level: 'warn', message: 'slow disk', stream: 'stderr' },
  { type: 'error', ...b(10), message: 'rate limited', code: '429', fatal: false },
  {
    type: 'llm_call',
    ...b(11),
    model: 'm-1',
    inputTokens: 100,
    outputTokens: 50,
    cacheWriteTokens: 20,
    costUsd: 0.0007,
  },
  { type: 'message', ...b(12), role: 'assistant', content: 'done' },
];

describe('TraceEvent: an agent transcript is a trace', () => {
  it('parses every kind, including the three known extensions and a namespaced one', () => {
    const parsed = Trajectory.parse(transcript);
    expect(parsed).toEqual(transcript);
    const approvals = parsed.filter((e) => isExtension(e, 'approval'));
    expect(approvals.map((e) => (isExtension(e, 'approval') ? e.data.decision : null))).toEqual([
      'requested',
      'approved',
    ]);
  });
  it.each([
    [{ type: 'extension', ...b(0), ext: 'approval', data: { requestId: 'a', decision: 'maybe' } }, 'data'],
    [{ type: 'extension', ...b(0), ext: 'todo', data: { items: [{ id: 't', text: 'x' }] } }, 'data'],
    [{ type: 'extension', ...b(0), ext: 'subagent', data: { action: 'spawned' } }, 'data'],
    [{ type: 'extension', ...b(0), ext: 'review', data: {} }, 'ext'],
    [{ type: 'extension', ...b(0), ext: 'toString', data: {} }, 'ext'],
    [{ type: 'extension', ...b(0), ext: 'acme/review', data: 'not an object' }, 'data'],
    [{ type: 'llm_call', ...b(0), model: 'm', inputTokens: 1.5, outputTokens: 0 }, 'inputTokens'],
    [{ type: 'llm_call', ...b(0), model: 'm', inputTokens: 1, outputTokens: 0, costUsd: -1 }, 'costUsd'],
    [{ type: 'message', ...b(0), role: 'narrator', content: 'x' }, 'role'],
    [{ type: 'telemetry', ...b(0) }, 'type'],
    [{ type: 'log', seq: -1, ts: at(0), runId: 'r', level: 'info', message: 'x' }, 'seq'],
  ])('rejects %j at %s', (event, field) => {
    const r = TraceEvent.safeParse(event);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path[0]).toBe(field);
  });
  it('a trajectory is one run with increasing seq', () => {
    expect(Trajectory.safeParse([transcript[1], transcript[0]]).success).toBe(false);
    expect(Trajectory.safeParse([transcript[0], { ...transcript[1], runId: 'other' }]).success).toBe(false);
  });
});

describe('usageFromTrace', () => {
  it('sums llm_call tokens and cost, ignoring everything else', () => {
    const usage = usageFromTrace(Trajectory.parse(transcript));
    expect(usage).toMatchObject({
      inputTokens: 1300,
      outputTokens: 350,
      cacheReadTokens: 800,
      cacheWriteTokens: 20,
      llmCalls: 2,
    });
    expect(usage.costUsd).toBeCloseTo(0.013, 10);
    expect(usageFromTrace([])).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
      llmCalls: 0,
    });
  });
  it('property: the fold of a concatenation is the sum of the folds', () => {
    const call = fc.record({
      i: fc.nat(1e6),
      o: fc.nat(1e6),
      c: fc.nat(1e6),
      usd: fc.integer({ min: 0, max: 1e6 }),
    });
    fc.assert(
      fc.property(fc.array(call), fc.array(call), (xs, ys) => {
        const toEvents = (cs: typeof xs, from: number) =>
          cs.map((c, k) =>
            TraceEvent.parse({
              type: 'llm_call',
              ...b(from + k),
              model: 'm',
              inputTokens: c.i,
              outputTokens: c.o,
              cacheReadTokens: c.c,
              costUsd: c.usd / 1e6,
            }),
          );
        const a = usageFromTrace(toEvents(xs, 0));
        const c = usageFromTrace(toEvents(ys, xs.length));
        const all = usageFromTrace([...toEvents(xs, 0), ...toEvents(ys, xs.length)]);
        expect(all.inputTokens).toBe(a.inputTokens + c.inputTokens);
        expect(all.llmCalls).toBe(xs.length + ys.length);
        expect(all.costUsd).toBeCloseTo(a.costUsd + c.costUsd, 6);
      }),
      { numRuns: 100 },
    );
  });
});
