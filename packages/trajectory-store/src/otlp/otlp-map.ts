// OTLP spans → TraceEvent drafts (run-model's kinds), following the GenAI semantic conventions:
//   a model call (gen_ai.operation.name chat | text_completion | generate_content | embeddings, or usage
//   attributes)     → message events for gen_ai.system_instructions / gen_ai.input.messages (at start),
//                     one llm_call (model, tokens, cache tokens, cost, latency; at start),
//                     message events for gen_ai.output.messages (at end)
//   a tool execution (execute_tool, or gen_ai.tool.name) → tool_call (at start) + tool_result (at end)
//   any other span   → extension `otel/span` carrying its name, ids, kind, times and attributes
//   span events gen_ai.{system,user,assistant,tool}.message / gen_ai.choice → message; `exception` → error
//   a span with status ERROR (and no exception event) → error
// Events are ordered by time (nanoseconds), ties in the order above.
import type { JsonObject, JsonValue } from '@everdict/run-model';
import type { TraceEventDraft } from '../events.js';
import type { Attributes, AttributeValue, OtlpSpan } from './otlp-decode.js';

const MODEL_OPS = new Set(['chat', 'text_completion', 'generate_content', 'embeddings']);
const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const STATUS_ERROR = 2;

/** Nanoseconds since the epoch → ISO-8601 with nine fractional digits. */
export function nanosToIso(nanos: string): string {
  const ns = BigInt(nanos);
  const iso = new Date(Number(ns / 1_000_000n)).toISOString();
  return `${iso.slice(0, 19)}.${String(ns % 1_000_000_000n).padStart(9, '0')}Z`;
}

function int(v: AttributeValue | undefined): number | undefined {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function num(v: AttributeValue | undefined): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function str(v: AttributeValue | undefined): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/**
 * The deepest nesting parsed out of an attribute's text. Deeper text stays text: a recursive walk of it
 * (JSON.stringify, the event schema, canonical JSON) could overflow the stack, and V8's JSON.parse does not.
 */
export const MAX_ATTRIBUTE_JSON_DEPTH = 64;

/**
 * The deepest nesting of `[`/`{` in JSON text (strings skipped), stopping as soon as it passes `limit`: a
 * linear scan, before anything parses or walks the text recursively (the control plane's edge uses it too).
 */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return deepest;
}

/**
 * A JSON-carrying attribute (arguments, results, messages): parsed if it is JSON text nested at most
 * MAX_ATTRIBUTE_JSON_DEPTH levels, else as is.
 */
function jsonOf(v: AttributeValue | undefined): JsonValue {
  if (typeof v === 'string') {
    if (jsonNestingDepth(v, MAX_ATTRIBUTE_JSON_DEPTH) > MAX_ATTRIBUTE_JSON_DEPTH) return v;
    try {
      return JSON.parse(v) as JsonValue;
    } catch {
      return v;
    }
  }
  return (v ?? null) as JsonValue;
}

/** Text of a GenAI message: `content` as a string, or its text parts joined. */
function textOf(message: JsonValue): string {
  if (typeof message === 'string') return message;
  if (!message || typeof message !== 'object' || Array.isArray(message)) return JSON.stringify(message);
  const m = message as JsonObject;
  if (typeof m.content === 'string') return m.content;
  const parts = Array.isArray(m.parts) ? m.parts : Array.isArray(m.content) ? m.content : [];
  const texts = parts.map((p) =>
    p && typeof p === 'object' && !Array.isArray(p) && typeof (p as JsonObject).content === 'string'
      ? ((p as JsonObject).content as string)
      : typeof p === 'object' && p && 'text' in p && typeof (p as JsonObject).text === 'string'
        ? ((p as JsonObject).text as string)
        : JSON.stringify(p),
  );
  return texts.join('\n');
}

type Role = 'system' | 'user' | 'assistant' | 'tool';

function messages(v: AttributeValue | undefined, fallback: Role): { role: Role; content: string }[] {
  const parsed = jsonOf(v);
  const list = Array.isArray(parsed) ? parsed : parsed === null ? [] : [parsed];
  return list.map((m) => {
    const role = m && typeof m === 'object' && !Array.isArray(m) ? (m as JsonObject).role : undefined;
    return {
      role: typeof role === 'string' && ROLES.has(role) ? (role as Role) : fallback,
      content: textOf(m),
    };
  });
}

interface Timed {
  readonly at: bigint;
  readonly order: number;
  readonly draft: TraceEventDraft;
}

function spanEvents(span: OtlpSpan): Timed[] {
  const a = span.attributes;
  const start = BigInt(span.startTimeUnixNano);
  const end = BigInt(span.endTimeUnixNano);
  const out: Timed[] = [];
  const push = (at: bigint, draft: TraceEventDraft) => out.push({ at, order: out.length, draft });
  const ts = (at: bigint) => nanosToIso(String(at));
  const op = str(a['gen_ai.operation.name']);
  const inputTokens = int(a['gen_ai.usage.input_tokens']) ?? int(a['gen_ai.usage.prompt_tokens']);
  const outputTokens = int(a['gen_ai.usage.output_tokens']) ?? int(a['gen_ai.usage.completion_tokens']);
  const isModelCall =
    (op !== undefined && MODEL_OPS.has(op)) || inputTokens !== undefined || outputTokens !== undefined;
  const tool = str(a['gen_ai.tool.name']);

  if (isModelCall) {
    for (const m of messages(a['gen_ai.system_instructions'], 'system'))
      push(start, { type: 'message', ts: ts(start), role: 'system', content: m.content });
    for (const m of messages(a['gen_ai.input.messages'], 'user'))
      push(start, { type: 'message', ts: ts(start), ...m });
    const cacheRead = int(a['gen_ai.usage.cache_read.input_tokens']);
    const cacheWrite = int(a['gen_ai.usage.cache_creation.input_tokens']);
    const cost = num(a['gen_ai.usage.cost']) ?? num(a['everdict.cost_usd']);
    push(start, {
      type: 'llm_call',
      ts: ts(start),
      model: str(a['gen_ai.response.model']) ?? str(a['gen_ai.request.model']) ?? 'unknown',
      inputTokens: inputTokens ?? 0,
      outputTokens: outputTokens ?? 0,
      ...(cacheRead !== undefined ? { cacheReadTokens: cacheRead } : {}),
      ...(cacheWrite !== undefined ? { cacheWriteTokens: cacheWrite } : {}),
      ...(cost !== undefined ? { costUsd: cost } : {}),
      latencyMs: Number(end - start) / 1e6,
    });
    for (const m of messages(a['gen_ai.output.messages'], 'assistant'))
      push(end, { type: 'message', ts: ts(end), ...m });
  } else if (op === 'execute_tool' || tool) {
    const callId = str(a['gen_ai.tool.call.id']) ?? span.spanId;
    push(start, {
      type: 'tool_call',
      ts: ts(start),
      callId,
      tool: tool ?? span.name,
      input: jsonOf(a['gen_ai.tool.call.arguments'] ?? {}),
    });
    push(end, {
      type: 'tool_result',
      ts: ts(end),
      callId,
      output: jsonOf(a['gen_ai.tool.call.result']),
      ...(span.status.code === STATUS_ERROR ? { isError: true } : {}),
    });
  } else {
    const data: JsonObject = {
      name: span.name,
      traceId: span.traceId,
      spanId: span.spanId,
      kind: span.kind,
      startTimeUnixNano: span.startTimeUnixNano,
      endTimeUnixNano: span.endTimeUnixNano,
      attributes: a as JsonObject,
    };
    if (span.parentSpanId) data.parentSpanId = span.parentSpanId;
    push(start, { type: 'extension', ts: ts(start), ext: 'otel/span', data });
  }

  let sawException = false;
  for (const e of span.events) {
    const at = BigInt(e.timeUnixNano);
    const role = /^gen_ai\.(system|user|assistant|tool)\.message$/.exec(e.name)?.[1] as Role | undefined;
    if (role || e.name === 'gen_ai.choice') {
      const body = e.attributes.content ?? e.attributes.message ?? e.attributes['gen_ai.event.content'];
      push(at, { type: 'message', ts: ts(at), role: role ?? 'assistant', content: textOf(jsonOf(body)) });
    } else if (e.name === 'exception') {
      sawException = true;
      const type = str(e.attributes['exception.type']);
      push(at, {
        type: 'error',
        ts: ts(at),
        message: str(e.attributes['exception.message']) ?? type ?? 'exception',
        ...(type ? { code: type } : {}),
      });
    }
  }
  if (span.status.code === STATUS_ERROR && !sawException)
    push(end, { type: 'error', ts: ts(end), message: span.status.message ?? `span ${span.name} failed` });
  return out;
}

/** The drafts of a group of spans (one trace, or one run's spans), in time order. */
export function spansToDrafts(spans: readonly OtlpSpan[]): TraceEventDraft[] {
  const sorted = [...spans].sort((x, y) => {
    const d = BigInt(x.startTimeUnixNano) - BigInt(y.startTimeUnixNano);
    return d !== 0n ? (d < 0n ? -1 : 1) : x.spanId < y.spanId ? -1 : x.spanId > y.spanId ? 1 : 0;
  });
  const timed: (Timed & { span: number })[] = [];
  sorted.forEach((span, i) => {
    for (const t of spanEvents(span)) timed.push({ ...t, span: i });
  });
  timed.sort((x, y) => (x.at !== y.at ? (x.at < y.at ? -1 : 1) : x.span - y.span || x.order - y.order));
  return timed.map((t) => t.draft);
}

/** `everdict.run_id` from a span's resource attributes, if it names one. */
export function runIdOf(span: OtlpSpan): string | undefined {
  return str(span.resource['everdict.run_id']);
}

export type { Attributes };
