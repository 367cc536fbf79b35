// How `agent chat` shows a turn's trajectory: a conversation, not an event dump. The assistant's words as text;
// each tool call as `→ tool {input}` and its result as `← tool {output}` (`← tool error {…}` when it failed);
// a log as its text, an error as `error: …`. What the chat already says another way is left out: the user's
// own message (typed at the prompt), the system prompt, the model calls' accounting and the approval and park
// extensions (the chat's stderr lines `waiting: …`, `call_0_0 approved`). Anything else is one line, as `logs`
// shows it. `--json` prints every event as stored instead.
import type { Context } from '../context.js';
import { line } from '../io.js';
import { brief, describeEvent } from './watch.js';

/** Event types the chat says otherwise, or that are the model's bookkeeping. */
const UNSHOWN = new Set(['llm_call', 'extension']);

/**
 * A printer for one conversation's turns: remembers each call's tool (a result names only its call id), across
 * the turn's parks and resumes.
 */
export function chatPrinter(ctx: Context, json: boolean): (ev: Record<string, unknown>) => void {
  const tools = new Map<string, string>();
  const out = (text: string) => line(ctx.io.stdout, text);
  return (ev) => {
    if (json) return out(JSON.stringify(ev));
    const callId = typeof ev.callId === 'string' ? ev.callId : undefined;
    switch (ev.type) {
      case 'message':
        if (ev.role === 'assistant' && typeof ev.content === 'string' && ev.content.trim() !== '')
          out(ev.content.replace(/\n$/, ''));
        return;
      case 'tool_call': {
        const tool = typeof ev.tool === 'string' ? ev.tool : '?';
        if (callId) tools.set(callId, tool);
        return out(`→ ${tool} ${brief(ev.input)}`);
      }
      case 'tool_result': {
        const tool = (callId && tools.get(callId)) ?? callId ?? '?';
        return out(`← ${tool}${ev.isError === true ? ' error' : ''} ${brief(ev.output)}`);
      }
      case 'log':
        if (typeof ev.message === 'string')
          return line(ev.stream === 'stderr' ? ctx.io.stderr : ctx.io.stdout, ev.message);
        break;
      case 'error':
        return line(ctx.io.stderr, `error: ${String(ev.message ?? '')}`);
    }
    if (!UNSHOWN.has(String(ev.type))) out(describeEvent(String(ev.seq ?? '?'), ev));
  };
}
