// TraceEvent — the trajectory contract. A harness trace and an agent transcript are both TraceEvent[].
import { z } from 'zod';
import { Id, JsonObject, JsonValue, Timestamp, Tokens, Usd } from './primitives.js';
import { EMPTY_USAGE, type Usage } from './usage.js';

const base = { seq: z.int().nonnegative(), ts: Timestamp, runId: Id };

export const MessageEvent = z.strictObject({
  type: z.literal('message'),
  ...base,
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
});
export const ToolCallEvent = z.strictObject({
  type: z.literal('tool_call'),
  ...base,
  callId: Id,
  tool: z.string().min(1),
  input: JsonValue,
});
export const ToolResultEvent = z.strictObject({
  type: z.literal('tool_result'),
  ...base,
  callId: Id,
  output: JsonValue,
  isError: z.boolean().optional(),
});
/** One model call: tokens are integers; cost in USD when priced (the control plane prices at seal). */
export const LlmCallEvent = z.strictObject({
  type: z.literal('llm_call'),
  ...base,
  model: z.string().min(1),
  inputTokens: Tokens,
  outputTokens: Tokens,
  cacheReadTokens: Tokens.optional(),
  cacheWriteTokens: Tokens.optional(),
  costUsd: Usd.optional(),
  latencyMs: z.number().nonnegative().optional(),
});
export const LogEvent = z.strictObject({
  type: z.literal('log'),
  ...base,
  level: z.enum(['debug', 'info', 'warn', 'error']),
  message: z.string(),
  stream: z.enum(['stdout', 'stderr']).optional(),
});
export const ErrorEvent = z.strictObject({
  type: z.literal('error'),
  ...base,
  message: z.string(),
  code: z.string().optional(),
  fatal: z.boolean().optional(),
});

/** approval: a parked tool call asked for, then decided (pairs with the run's awaiting_input). */
export const ApprovalData = z.strictObject({
  requestId: Id,
  decision: z.enum(['requested', 'approved', 'denied']),
  tool: z.string().optional(),
  callId: Id.optional(),
  by: Id.optional(),
  reason: z.string().optional(),
});
/** todo: the agent's current plan, as a whole list each time it changes. */
export const TodoData = z.strictObject({
  items: z.array(
    z.strictObject({
      id: Id,
      text: z.string(),
      status: z.enum(['pending', 'in_progress', 'done', 'dropped']),
    }),
  ),
});
/** subagent: a child agent spawned (its own run, when it is one) and what it returned. */
export const SubagentData = z.strictObject({
  action: z.enum(['spawned', 'returned']),
  agentId: Id,
  childRunId: Id.optional(),
  summary: z.string().optional(),
});
export const KNOWN_EXTENSIONS = { approval: ApprovalData, todo: TodoData, subagent: SubagentData } as const;
export type KnownExtension = keyof typeof KNOWN_EXTENSIONS;

/** A third party's extension name: `vendor/name` (e.g. `acme/review`), never a bare word. */
export const NamespacedExtension = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9_.-]*$/,
    'an extension is approval | todo | subagent | vendor/name',
  );

export type ExtensionPayload =
  | { ext: 'approval'; data: z.infer<typeof ApprovalData> }
  | { ext: 'todo'; data: z.infer<typeof TodoData> }
  | { ext: 'subagent'; data: z.infer<typeof SubagentData> }
  | { ext: string & {}; data: JsonObject };

type Base = { seq: number; ts: string; runId: string };
export type ExtensionEvent = { type: 'extension' } & Base & ExtensionPayload;

/** The typed extension point: the three known ones are validated; `vendor/name` ones carry a JSON object. */
export const ExtensionEvent = z
  .strictObject({ type: z.literal('extension'), ...base, ext: z.string(), data: z.unknown() })
  .transform((v, ctx): ExtensionEvent => {
    const known = Object.hasOwn(KNOWN_EXTENSIONS, v.ext)
      ? KNOWN_EXTENSIONS[v.ext as KnownExtension]
      : undefined;
    if (!known && !NamespacedExtension.safeParse(v.ext).success) {
      ctx.addIssue({
        code: 'custom',
        path: ['ext'],
        message: 'extension is approval | todo | subagent | vendor/name',
      });
      return z.NEVER;
    }
    const parsed = (known ?? JsonObject).safeParse(v.data);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: ['data', ...issue.path] });
      return z.NEVER;
    }
    return { ...v, data: parsed.data } as ExtensionEvent;
  });

export const TraceEvent = z.discriminatedUnion('type', [
  MessageEvent,
  ToolCallEvent,
  ToolResultEvent,
  LlmCallEvent,
  LogEvent,
  ErrorEvent,
  ExtensionEvent,
]);
export type TraceEvent = z.output<typeof TraceEvent>;
export type TraceEventInput = z.input<typeof TraceEvent>;
export type TraceEventType = TraceEvent['type'];
export type LlmCallEvent = z.infer<typeof LlmCallEvent>;

/** A whole trajectory: one run, `seq` strictly increasing. */
export const Trajectory = z.array(TraceEvent).superRefine((events, ctx) => {
  events.forEach((e, i) => {
    const prev = events[i - 1];
    if (prev && e.seq <= prev.seq)
      ctx.addIssue({ code: 'custom', path: [i, 'seq'], message: 'seq must increase' });
    if (prev && e.runId !== prev.runId) {
      ctx.addIssue({ code: 'custom', path: [i, 'runId'], message: 'one trajectory, one run' });
    }
  });
});

/** Usage is the fold of llm_call events: tokens and priced cost summed, one call counted per event. */
export function usageFromTrace(events: Iterable<TraceEvent>): Usage {
  const usage = { ...EMPTY_USAGE };
  for (const e of events) {
    if (e.type !== 'llm_call') continue;
    usage.inputTokens += e.inputTokens;
    usage.outputTokens += e.outputTokens;
    usage.cacheReadTokens += e.cacheReadTokens ?? 0;
    usage.cacheWriteTokens += e.cacheWriteTokens ?? 0;
    usage.costUsd += e.costUsd ?? 0;
    usage.llmCalls += 1;
  }
  return usage;
}

/** Narrow an extension event to one known extension, with its typed data. */
export function isExtension<K extends KnownExtension>(
  event: TraceEvent,
  ext: K,
): event is Extract<ExtensionEvent, { ext: K }> {
  return event.type === 'extension' && event.ext === ext;
}
