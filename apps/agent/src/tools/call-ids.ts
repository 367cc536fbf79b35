// Tool-call ids as the transcript and the control plane need them: non-empty, at most 200 characters (a
// TraceEvent id), and unique within the turn — a dispatch is idempotent per call id and a result is matched
// to its call by it. Some OpenAI-compatible servers answer empty ids, or repeat one; such a call gets an id
// of its own here, before anything is stored or dispatched (the model reads the transcript's ids back, so the
// round trip holds).
import type { TraceEvent } from '@everdict/run-model';
import type { ToolCall } from '../model/provider.js';

const MAX_ID = 200;

/** `calls` with every id usable and unused by `events` and by each other (a usable, fresh id is kept). */
export function uniqueCallIds(calls: readonly ToolCall[], events: readonly TraceEvent[]): ToolCall[] {
  const taken = new Set<string>();
  for (const e of events) if (e.type === 'tool_call' || e.type === 'tool_result') taken.add(e.callId);
  const fresh = (i: number): string => {
    let id = `call_${events.length}_${i}`;
    for (let n = 1; taken.has(id); n++) id = `call_${events.length}_${i}_${n}`;
    return id;
  };
  return calls.map((c, i) => {
    const usable = c.callId.length > 0 && c.callId.length <= MAX_ID && !taken.has(c.callId);
    const callId = usable ? c.callId : fresh(i);
    taken.add(callId);
    return callId === c.callId ? c : { ...c, callId };
  });
}
