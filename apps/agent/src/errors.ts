// The one error class of @everdict/agent: a stable `code` that maps to exactly one HTTP status. Tool
// refusals the model sees (an envelope's 402, a tool this deployment cannot run yet) are these codes too.

export type AgentErrorCode =
  | 'bad_request' // 400: a tool's arguments, a config value or a report failed to parse
  | 'not_found' // 404: a run, turn or call the control plane does not know (or not yours)
  | 'stale_lease' // 409: the turn's lease is gone or re-granted under another epoch
  | 'state_conflict' // 409: the turn is not in a state that allows this (e.g. resuming a turn that is not ready)
  | 'identity_mismatch' // 409: the record names another unit/grant set than this agent's
  | 'record_refused' // 409: runrecord refused the append (snapshot/manifest mismatch, phase…); detail.recordCode
  | 'attestation_refused' // 409: the control plane refused this host's interval attestation (key, head, journal)
  | 'not_paired' // 401: no usable pairing (run `everdict-agent pair`), or the pairing token was refused
  | 'envelope_exhausted' // 402: the agent's envelope cannot afford the caused run
  | 'capacity_refused' // 429: a queue cap, the in-flight cap or a fan-out guard refused the caused run
  | 'agent_disabled' // 409: the agent is disabled: no activation
  | 'tool_unavailable' // 422: a tool this deployment cannot run yet (refused, never pretended)
  | 'model_failed' // 503: the model provider failed or answered something unreadable
  | 'control_plane_unavailable'; // 503: the control plane could not be reached

const STATUS: Record<AgentErrorCode, number> = {
  bad_request: 400,
  not_found: 404,
  stale_lease: 409,
  state_conflict: 409,
  identity_mismatch: 409,
  record_refused: 409,
  attestation_refused: 409,
  not_paired: 401,
  envelope_exhausted: 402,
  capacity_refused: 429,
  agent_disabled: 409,
  tool_unavailable: 422,
  model_failed: 503,
  control_plane_unavailable: 503,
};

export class AgentError extends Error {
  readonly code: AgentErrorCode;
  readonly httpStatus: number;
  readonly detail: Readonly<Record<string, unknown>>;

  constructor(code: AgentErrorCode, message: string, detail: Record<string, unknown> = {}) {
    super(message);
    this.name = 'AgentError';
    this.code = code;
    this.httpStatus = STATUS[code];
    this.detail = detail;
  }

  /** What the model sees when a tool is refused: the code, the status and the message, nothing else. */
  toToolOutput(): { error: { code: AgentErrorCode; status: number; message: string } } {
    return { error: { code: this.code, status: this.httpStatus, message: this.message } };
  }
}

export function isAgentError(e: unknown): e is AgentError {
  return e instanceof AgentError;
}

export function httpStatusOf(code: AgentErrorCode): number {
  return STATUS[code];
}

/** Parse a boundary input; a failure is a typed 400, never a bare ZodError across the package boundary. */
export function parseOrThrow<T>(
  schema: {
    safeParse(input: unknown): { success: true; data: T } | { success: false; error: { message: string } };
  },
  input: unknown,
  what: string,
): T {
  const r = schema.safeParse(input);
  if (!r.success) throw new AgentError('bad_request', `${what}: ${r.error.message}`);
  return r.data;
}
