// One parse per create: the HTTP edge validates a create body with CreateRunInput (the route's schema) and
// marks the value it got; the lifecycle (prepareCreate) takes a marked value as it is instead of parsing it a
// second time. Only a value CreateRunInput produced is ever marked (the schema is idempotent: its second
// parse would return an equal object), so every other caller — internal routes, triggers, subscriptions,
// the agent bridge, in-process users — still goes through the parse.
import { CreateRunInput } from './types.js';

export type ParsedCreate = ReturnType<typeof CreateRunInput.parse>;

const parsedCreates = new WeakSet<object>();

/** Parse a create body at the edge; the result is marked as parsed (for `parseCreateInput`). */
export function safeParseCreate(raw: unknown): ReturnType<typeof CreateRunInput.safeParse> {
  const r = CreateRunInput.safeParse(raw);
  if (r.success) parsedCreates.add(r.data);
  return r;
}

/** Marks the value the route's validator produced with CreateRunInput. */
export function markParsedCreate(value: ParsedCreate): ParsedCreate {
  parsedCreates.add(value);
  return value;
}

/** CreateRunInput.parse, unless `raw` is a value it already produced (marked at the edge). */
export function parseCreateInput(raw: unknown): ParsedCreate {
  return typeof raw === 'object' && raw !== null && parsedCreates.has(raw)
    ? (raw as ParsedCreate)
    : CreateRunInput.parse(raw);
}
