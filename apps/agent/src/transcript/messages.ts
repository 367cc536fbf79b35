// From a transcript to the messages a model reads: the agent's own system prompt first, then every
// message, tool call and tool result in order. Tool calls join the assistant message they came with; a
// tool result becomes a `tool` message carrying its JSON output. Nothing else is kept anywhere: this is the
// whole state a resumed turn needs.
import type { TraceEvent } from '@everdict/run-model';
import type { ChatMessage, ToolCall } from '../model/provider.js';

export function messagesOf(systemPrompt: string, events: readonly TraceEvent[]): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
  for (const e of events) {
    if (e.type === 'message') {
      if (e.role === 'assistant') out.push({ role: 'assistant', content: e.content, toolCalls: [] });
      else if (e.role === 'tool') continue;
      else out.push({ role: e.role, content: e.content });
    } else if (e.type === 'tool_call') {
      const last = out.at(-1);
      const call: ToolCall = { callId: e.callId, tool: e.tool, argumentsJson: JSON.stringify(e.input) };
      if (last?.role === 'assistant')
        out[out.length - 1] = { ...last, toolCalls: [...(last.toolCalls ?? []), call] };
      else out.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (e.type === 'tool_result') {
      out.push({ role: 'tool', callId: e.callId, content: JSON.stringify(e.output) });
    }
  }
  return out;
}

/** Calls the transcript dispatched that no result answers yet, in dispatch order. */
export function outstandingCalls(events: readonly TraceEvent[]): { callId: string; tool: string }[] {
  const open = new Map<string, string>();
  for (const e of events) {
    if (e.type === 'tool_call') open.set(e.callId, e.tool);
    else if (e.type === 'tool_result') open.delete(e.callId);
  }
  return [...open].map(([callId, tool]) => ({ callId, tool }));
}

/**
 * The model's final answer, when the transcript already ends with one: its last message, tool call or tool
 * result is an assistant message with no tool call after it. (A turn whose `succeeded` report was lost is
 * leased again with its answer stored: it settles with it, and the model is not asked — and paid — again.)
 */
export function storedAnswer(events: readonly TraceEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type === 'message') return e.role === 'assistant' ? e.content : undefined;
    if (e.type === 'tool_call' || e.type === 'tool_result') return undefined;
  }
  return undefined;
}
