// The model-provider interface the agent loop speaks: one chat completion over a transcript's messages and
// the agent's tools, answered with the assistant's text, its tool calls and the usage it reported.
import type { JsonValue } from '@everdict/run-model';

export type ChatMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string; readonly toolCalls?: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly callId: string; readonly content: string };

export interface ToolCall {
  readonly callId: string;
  readonly tool: string;
  /** The arguments as the model wrote them (JSON text); parsed by the tool with zod. */
  readonly argumentsJson: string;
}

/** A tool as the model is told about it: a name, what it does, and a JSON Schema for its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: { readonly [key: string]: JsonValue };
}

export interface ModelUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens?: number;
}

export interface Completion {
  /** The model that answered (the provider's name for it; falls back to the one asked for). */
  readonly model: string;
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
  /** Absent when the provider reported none (then the loop counts tokens as unknown, never as zero). */
  readonly usage?: ModelUsage;
  readonly finishReason: string;
}

export interface CompletionRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
  readonly signal?: AbortSignal;
  /** Streamed text as it arrives (a provider that does not stream calls it once with the whole text). */
  readonly onText?: (delta: string) => void;
}

export interface ModelProvider {
  readonly name: string;
  complete(request: CompletionRequest): Promise<Completion>;
}
