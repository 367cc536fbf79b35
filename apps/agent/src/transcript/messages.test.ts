import type { TraceEvent } from '@everdict/run-model';
import { describe, expect, it } from 'vitest';
import { messagesOf, outstandingCalls } from './messages.js';

const base = { ts: '2026-12-01T10:00:00.000Z', runId: 't' };
const events: TraceEvent[] = [
  { ...base, seq: 0, type: 'message', role: 'user', content: 'go' },
  { ...base, seq: 1, type: 'llm_call', model: 'm', inputTokens: 3, outputTokens: 4 },
  { ...base, seq: 2, type: 'message', role: 'assistant', content: 'asking' },
  { ...base, seq: 3, type: 'tool_call', callId: 'c1', tool: 'ask_approval', input: { question: 'ok?' } },
  { ...base, seq: 4, type: 'tool_call', callId: 'c2', tool: 'run_command', input: { command: ['ls'] } },
  { ...base, seq: 5, type: 'tool_result', callId: 'c2', output: { status: 'succeeded' } },
];

describe('a transcript read back as messages', () => {
  it('joins tool calls to their assistant message and keeps results in order', () => {
    expect(messagesOf('sys', events)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'asking',
        toolCalls: [
          { callId: 'c1', tool: 'ask_approval', argumentsJson: '{"question":"ok?"}' },
          { callId: 'c2', tool: 'run_command', argumentsJson: '{"command":["ls"]}' },
        ],
      },
      { role: 'tool', callId: 'c2', content: '{"status":"succeeded"}' },
    ]);
  });

  it('knows which calls are still outstanding from the transcript alone', () => {
    expect(outstandingCalls(events)).toEqual([{ callId: 'c1', tool: 'ask_approval' }]);
  });
});
