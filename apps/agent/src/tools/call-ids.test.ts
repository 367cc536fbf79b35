// Tool-call ids made usable: a fresh, usable id is kept; an empty, over-long or repeated one (in the
// transcript or the same reply) gets one of its own that nothing else in the turn uses.
import type { TraceEvent } from '@everdict/run-model';
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../model/provider.js';
import { uniqueCallIds } from './call-ids.js';

const call = (callId: string): ToolCall => ({ callId, tool: 'read_run', argumentsJson: '{}' });
const stored = (callId: string, seq: number): TraceEvent =>
  ({
    type: 'tool_call',
    seq,
    runId: 'run_1',
    ts: '2026-01-01T00:00:00.000Z',
    callId,
    tool: 'read_run',
    input: {},
  }) as TraceEvent;

describe('uniqueCallIds', () => {
  it('keeps usable fresh ids and replaces empty, over-long and repeated ones with unused ids', () => {
    const events = [stored('old', 0), stored('call_2_0', 1)];
    const out = uniqueCallIds(
      [call('fresh'), call(''), call('old'), call('x'.repeat(201)), call('fresh'), call('call_2_1')],
      events,
    ).map((c) => c.callId);
    expect(out[0]).toBe('fresh');
    expect(new Set([...out, 'old', 'call_2_0']).size).toBe(out.length + 2);
    expect(out.every((id) => id.length > 0 && id.length <= 200)).toBe(true);
  });

  it('leaves a reply of usable ids as it is', () => {
    const calls = [call('a'), call('b')];
    expect(uniqueCallIds(calls, [])).toEqual(calls);
  });
});
