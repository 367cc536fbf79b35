// How a conversation's trajectory reads — an agent turn in `agent chat`, an eval harness's trace in `logs` — as a
// conversation, not an event dump. Messages as text; each tool call as `→ tool {input}` and its result as
// `← tool {output}` (`← tool error {…}` when it failed); a log as its text, an error as `error: …`; anything
// else one line, as `logs` shows an event. `--json` prints every event as stored instead.
//
// `agent chat` leaves out what the chat already says another way: the user's own message (typed at the prompt),
// the system prompt, the model calls' accounting and the approval and park extensions (the chat's stderr lines
// `waiting: …`, `call_0_0 approved`), and it prints the assistant's words bare. `logs` shows everyone's words,
// each after its role (`user: …`, `assistant: …`), and each model call as one line (`· llm m · 120 in / 30 out
// tokens · $0.0020 · 840 ms`).
import type { Context } from '../context.js';
import { line } from '../io.js';
import { usageLine } from './show.js';
import { brief, describeEvent } from './watch.js';

/** Event types the chat says otherwise, or that are the model's bookkeeping. */
const UNSHOWN_IN_CHAT = new Set(['llm_call', 'extension']);

/** One model call of a trace: its model, its tokens and cost (as `show` sums them), its latency. */
function llmCallLine(ev: Record<string, unknown>): string {
  const numbers = Object.fromEntries(
    Object.entries(ev).filter((e): e is [string, number] => typeof e[1] === 'number' && e[0] !== 'seq'),
  );
  const parts = [
    `llm ${typeof ev.model === 'string' ? ev.model : '?'}`,
    usageLine(numbers),
    typeof ev.latencyMs === 'number' && `${Math.round(ev.latencyMs)} ms`,
  ].filter(Boolean);
  return `· ${parts.join(' · ')}`;
}

/**
 * A printer for one conversation's events: remembers each call's tool (a result names only its call id), across
 * a turn's parks and resumes. `everyone`: every role's words after its name, and the model calls (`logs`);
 * otherwise the assistant's words bare, the rest of the chat's bookkeeping left out (`agent chat`).
 */
export function conversationPrinter(
  ctx: Context,
  json: boolean,
  { everyone }: { everyone: boolean },
): (ev: Record<string, unknown>) => void {
  const tools = new Map<string, string>();
  const out = (text: string) => line(ctx.io.stdout, text);
  return (ev) => {
    if (json) return out(JSON.stringify(ev));
    const callId = typeof ev.callId === 'string' ? ev.callId : undefined;
    switch (ev.type) {
      case 'message': {
        if (typeof ev.content !== 'string') break;
        const text = ev.content.replace(/\n$/, '');
        if (everyone) return out(`${String(ev.role ?? '?')}: ${text}`);
        if (ev.role === 'assistant' && text.trim() !== '') out(text);
        return;
      }
      case 'tool_call': {
        const tool = typeof ev.tool === 'string' ? ev.tool : '?';
        if (callId) tools.set(callId, tool);
        return out(`→ ${tool} ${brief(ev.input)}`);
      }
      case 'tool_result': {
        const tool = (callId && tools.get(callId)) ?? callId ?? '?';
        return out(`← ${tool}${ev.isError === true ? ' error' : ''} ${brief(ev.output)}`);
      }
      case 'llm_call':
        if (everyone) return out(llmCallLine(ev));
        return;
      case 'log':
        if (typeof ev.message === 'string')
          return line(ev.stream === 'stderr' ? ctx.io.stderr : ctx.io.stdout, ev.message);
        break;
      case 'error':
        return line(ctx.io.stderr, `error: ${String(ev.message ?? '')}`);
    }
    if (everyone || !UNSHOWN_IN_CHAT.has(String(ev.type))) out(describeEvent(String(ev.seq ?? '?'), ev));
  };
}

/** `agent chat`'s printer (above). */
export function chatPrinter(ctx: Context, json: boolean): (ev: Record<string, unknown>) => void {
  return conversationPrinter(ctx, json, { everyone: false });
}
