// The OpenAI-compatible provider against a local HTTP server speaking the chat-completions wire format:
// streamed chunks, tool-call arguments in pieces, usage in the last chunk — and a whole turn driven by it.
import { dataOf } from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type ChatServer, startChatServer } from '../../test/chat-server.js';
import { createAgent, message, type Seat, seat } from '../../test/support.js';
import { isAgentError } from '../errors.js';
import { workOnce } from '../loop/worker.js';
import { OpenAiProvider } from './openai-provider.js';

let server: ChatServer | undefined;
let cp: Seat | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(async () => {
  await cp?.stop();
});

describe('OpenAiProvider over the chat-completions wire format', () => {
  it('assembles streamed text, tool calls split in pieces, and the usage chunk', async () => {
    server = await startChatServer([
      {
        text: 'Checking the last run first.',
        toolCalls: [
          { id: 'call_a', name: 'read_run', arguments: JSON.stringify({ runId: 'run_1', what: 'outputs' }) },
          {
            id: 'call_b',
            name: 'ask_approval',
            arguments: JSON.stringify({ question: 'Ship it to production?' }),
          },
        ],
        usage: { prompt_tokens: 1234, completion_tokens: 56, cached_tokens: 1000 },
      },
    ]);
    const provider = new OpenAiProvider({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 });
    const deltas: string[] = [];
    const out = await provider.complete({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'release' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ callId: 'c0', tool: 'read_run', argumentsJson: '{"runId":"r0"}' }],
        },
        { role: 'tool', callId: 'c0', content: '{"status":"succeeded"}' },
      ],
      tools: [{ name: 'read_run', description: 'read', parameters: { type: 'object' } }],
      onText: (d) => deltas.push(d),
    });
    expect(out.content).toBe('Checking the last run first.');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(out.content);
    expect(out.toolCalls).toEqual([
      { callId: 'call_a', tool: 'read_run', argumentsJson: '{"runId":"run_1","what":"outputs"}' },
      { callId: 'call_b', tool: 'ask_approval', argumentsJson: '{"question":"Ship it to production?"}' },
    ]);
    expect(out.usage).toEqual({ inputTokens: 1234, outputTokens: 56, cacheReadTokens: 1000 });
    expect(out.finishReason).toBe('tool_calls');

    const sent = server.requests[0]!;
    expect(sent.stream).toBe(true);
    expect(sent.stream_options).toEqual({ include_usage: true });
    expect(sent.tools).toEqual([
      {
        type: 'function',
        function: { name: 'read_run', description: 'read', parameters: { type: 'object' } },
      },
    ]);
    expect(sent.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'release' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c0', type: 'function', function: { name: 'read_run', arguments: '{"runId":"r0"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c0', content: '{"status":"succeeded"}' },
    ]);
  });

  it('a provider error is a typed model_failed carrying the HTTP status', async () => {
    server = await startChatServer([{ status: 401, error: 'bad key' }]);
    const provider = new OpenAiProvider({ baseURL: server.baseURL, apiKey: 'wrong', maxRetries: 0 });
    const err = await provider
      .complete({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], tools: [] })
      .catch((e: unknown) => e);
    expect(isAgentError(err) && err.code).toBe('model_failed');
    expect(isAgentError(err) && err.detail.status).toBe(401);
  });

  it('drives a whole turn: tool call answered in the interval, then the answer; llm_call events carry tokens and cost', async () => {
    server = await startChatServer([
      {
        toolCalls: [{ id: 'call_r', name: 'read_run', arguments: '{"runId":"nope","what":"outputs"}' }],
        usage: { prompt_tokens: 300, completion_tokens: 20 },
      },
      { text: 'That run does not exist.', usage: { prompt_tokens: 360, completion_tokens: 8 } },
    ]);
    cp = await seat();
    const s = cp;
    const agentId = await createAgent(s, { tools: ['read_run'] });
    const runId = await message(s, agentId, 'How did run nope go?');
    const provider = new OpenAiProvider({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
    const [out] = await workOnce({ controlPlane: s.agents, provider: () => provider, holder: 'h1' }, 5000);
    expect(out).toMatchObject({ result: 'succeeded', summary: 'That run does not exist.' });
    // The second request carried the tool result the first call produced (a typed 404 the model saw).
    const second = server.requests[1]!.messages as { role: string; content: string; tool_call_id?: string }[];
    const tool = second.find((m) => m.role === 'tool')!;
    expect(tool.tool_call_id).toBe('call_r');
    expect(JSON.parse(tool.content)).toMatchObject({ error: { code: 'not_found', status: 404 } });
    const page = dataOf(
      await s.admin.GET('/runs/{id}/trajectory', { params: { path: { id: runId }, query: { limit: 100 } } }),
    );
    const calls = (page.items as TraceEvent[]).filter((e) => e.type === 'llm_call');
    expect(calls.map((c) => [c.inputTokens, c.outputTokens])).toEqual([
      [300, 20],
      [360, 8],
    ]);
    expect(calls.every((c) => (c.costUsd ?? 0) > 0)).toBe(true);
    expect(calls[0]!.costUsd).toBeCloseTo((300 * 3 + 20 * 15) / 1e6, 12);
    const settled = dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));
    expect(settled.usage).toMatchObject({ inputTokens: 660, outputTokens: 28, llmCalls: 2 });
  }, 300_000);
});
