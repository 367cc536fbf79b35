// A deterministic model for tests and the local demo: each step looks at the conversation so far and
// answers text and/or tool calls. It reports usage computed from the characters it read and wrote (≈ 4 per
// token), so a scripted turn spends like a real one and its llm_call events are never zero.
import { AgentError } from '../errors.js';
import type { ChatMessage, Completion, CompletionRequest, ModelProvider } from './provider.js';

export interface ScriptedReply {
  readonly content?: string;
  readonly toolCalls?: readonly {
    readonly tool: string;
    readonly args?: unknown;
    readonly callId?: string | undefined;
  }[];
}

/** One scripted step: a fixed reply, or a function of the messages (e.g. to read a tool result). */
export type ScriptStep = ScriptedReply | ((messages: readonly ChatMessage[]) => ScriptedReply);

const tokensOf = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function textOf(m: ChatMessage): string {
  if (m.role === 'assistant') return m.content + (m.toolCalls ?? []).map((c) => c.argumentsJson).join('');
  return m.content;
}

/**
 * Which step answers is decided by the transcript, not by the provider's memory: step i answers once the
 * conversation holds i assistant messages. So a second process that resumes a parked turn continues the
 * script where the first left it, with nothing carried over but the transcript.
 */
export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly #steps: readonly ScriptStep[];

  constructor(steps: readonly ScriptStep[]) {
    this.#steps = steps;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const index = request.messages.filter((m) => m.role === 'assistant').length;
    const step = this.#steps[index];
    if (step === undefined)
      throw new AgentError('model_failed', `the script has no step ${index} (it has ${this.#steps.length})`);
    const reply = typeof step === 'function' ? step(request.messages) : step;
    const content = reply.content ?? '';
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      callId: c.callId ?? `call_${index}_${i}`,
      tool: c.tool,
      argumentsJson: JSON.stringify(c.args ?? {}),
    }));
    if (content) request.onText?.(content);
    const read = request.messages.map(textOf).join('') + JSON.stringify(request.tools);
    const written = content + toolCalls.map((c) => c.tool + c.argumentsJson).join('');
    return {
      model: request.model,
      content,
      toolCalls,
      usage: { inputTokens: tokensOf(read), outputTokens: tokensOf(written) },
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    };
  }
}
