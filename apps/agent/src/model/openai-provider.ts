// An OpenAI-compatible chat-completions provider over the `openai` client 6.x: any server that speaks
// POST {baseURL}/chat/completions (OpenAI, vLLM, llama.cpp, Ollama, a gateway). It always streams
// (`stream_options.include_usage`, so the usage arrives in a last chunk with `choices: []`), forwards text
// deltas as they come, and assembles tool-call arguments that arrive in pieces keyed by `index`.
import OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions/completions';
import { AgentError, isAgentError } from '../errors.js';
import type { ChatMessage, Completion, CompletionRequest, ModelProvider, ToolCall } from './provider.js';

export interface OpenAiProviderOptions {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  readonly baseURL: string;
  readonly apiKey: string;
  /** Per request (default 120 s); the client retries twice on 408/429/5xx by itself unless `maxRetries`. */
  readonly timeoutMs?: number;
  readonly maxRetries?: number;
}

function toWire(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.callId, content: m.content };
    case 'assistant':
      return m.toolCalls && m.toolCalls.length > 0
        ? {
            role: 'assistant',
            content: m.content || null,
            tool_calls: m.toolCalls.map((c) => ({
              id: c.callId,
              type: 'function' as const,
              function: { name: c.tool, arguments: c.argumentsJson },
            })),
          }
        : { role: 'assistant', content: m.content };
  }
}

export class OpenAiProvider implements ModelProvider {
  readonly name = 'openai-compatible';
  readonly #client: OpenAI;

  constructor(options: OpenAiProviderOptions) {
    this.#client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      timeout: options.timeoutMs ?? 120_000,
      maxRetries: options.maxRetries ?? 2,
    });
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const tools: ChatCompletionTool[] = request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: { ...t.parameters } },
    }));
    try {
      const stream = this.#client.chat.completions.stream(
        {
          model: request.model,
          messages: request.messages.map(toWire),
          ...(tools.length > 0 ? { tools } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        request.signal ? { signal: request.signal } : undefined,
      );
      if (request.onText) {
        const onText = request.onText;
        stream.on('content.delta', ({ delta }) => onText(delta));
      }
      const done = await stream.finalChatCompletion();
      const choice = done.choices[0];
      if (!choice) throw new AgentError('model_failed', 'the model answered no choice');
      const toolCalls: ToolCall[] = [];
      for (const c of choice.message.tool_calls ?? []) {
        if (c.type !== 'function')
          throw new AgentError(
            'model_failed',
            `the model made a ${c.type} tool call (only functions are offered)`,
          );
        toolCalls.push({ callId: c.id, tool: c.function.name, argumentsJson: c.function.arguments || '{}' });
      }
      const u = done.usage;
      const cached = u?.prompt_tokens_details?.cached_tokens;
      return {
        model: done.model || request.model,
        content: choice.message.content ?? '',
        toolCalls,
        ...(u
          ? {
              usage: {
                inputTokens: u.prompt_tokens,
                outputTokens: u.completion_tokens,
                ...(cached ? { cacheReadTokens: cached } : {}),
              },
            }
          : {}),
        finishReason: choice.finish_reason ?? 'stop',
      };
    } catch (e) {
      if (isAgentError(e)) throw e;
      const status = e instanceof OpenAI.APIError ? e.status : undefined;
      throw new AgentError('model_failed', `model provider: ${(e as Error).message}`, {
        ...(status !== undefined ? { status } : {}),
      });
    }
  }
}
