// RFC 9457 problem details: every refusal leaves this app as `application/problem+json` with a
// stable `code`. This module owns the shape, its zod schema (for the OpenAPI doc) and the mapping
// from thrown errors to problems. Unknown errors become a 500 problem without a stack (logged).
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ZodError } from 'zod';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const IssueSchema = z
  .object({
    code: z.string(),
    path: z.array(z.union([z.string(), z.number()])),
    message: z.string(),
  })
  .openapi('ValidationIssue');

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: 'urn:everdict:problem:not_found' }),
    title: z.string(),
    status: z.number().int(),
    code: z.string().openapi({ description: 'Stable machine-readable reason; switch on this.' }),
    detail: z.string().optional(),
    rule: z.string().optional().openapi({ description: 'The admission rule that refused (402/429).' }),
    issues: z.array(IssueSchema).optional(),
  })
  .catchall(z.unknown())
  .openapi('Problem');

export type Problem = z.infer<typeof ProblemSchema>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function problem(
  status: number,
  code: string,
  detail?: string,
  extra: Record<string, unknown> = {},
): Problem {
  return {
    type: `urn:everdict:problem:${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    code,
    ...(detail === undefined ? {} : { detail }),
    ...extra,
  };
}

export function problemResponse(p: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(p), {
    status: p.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
  });
}

/** zod issues, trimmed to what a client needs (never the offending input echoed back). */
export function zodIssues(error: ZodError): z.infer<typeof IssueSchema>[] {
  return error.issues.slice(0, 50).map((i) => ({
    code: String(i.code),
    path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    message: i.message,
  }));
}

export function validationProblem(error: ZodError, where?: string): Problem {
  return problem(400, 'validation_failed', where ? `invalid ${where}` : 'invalid request', {
    issues: zodIssues(error),
  });
}

/**
 * A typed error from any layer: `ControlPlaneError` and the packages' errors all carry a string
 * `code`; those with an `httpStatus` map to it, the others through `STATUS_BY_CODE`.
 */
interface CodedError {
  readonly code: string;
  readonly message: string;
  readonly httpStatus?: number;
  readonly status?: number;
  readonly rule?: unknown;
  /** Structured context (AdmissionError's `detail`, others' `details`): echoed as `details`. */
  readonly detail?: unknown;
  readonly details?: unknown;
}

function isCodedError(e: unknown): e is CodedError {
  if (!(e instanceof Error)) return false;
  const code: unknown = (e as { code?: unknown }).code;
  return typeof code === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(code);
}

/** Codes of errors that carry no httpStatus of their own (the packages' errors all do). */
const STATUS_BY_CODE: Record<string, number> = {
  not_found: 404,
  invalid_transition: 409,
  illegal_transition: 409,
  conflict: 409,
  already_terminal: 409,
  envelope_exhausted: 402,
  budget_exhausted: 402,
  queue_cap: 429,
  tenant_queue_cap: 429,
  global_queue_cap: 429,
  concurrency_cap: 429,
  fan_out: 429,
  fan_out_cap: 429,
  depth_cap: 429,
  causal_depth: 429,
  self_cause: 429,
  cooldown: 429,
  unauthorized: 401,
  forbidden: 403,
  invalid: 400,
  invalid_spec: 400,
  validation_failed: 400,
  verify_failed: 422,
  chain_broken: 422,
};

function statusOf(e: CodedError): number {
  for (const s of [e.httpStatus, e.status]) {
    if (typeof s === 'number' && Number.isInteger(s) && s >= 400 && s <= 599) return s;
  }
  // A coded error nobody mapped is a bug of ours, not the caller's: 500 (and logged).
  return STATUS_BY_CODE[e.code] ?? 500;
}

export interface MappedError {
  readonly problem: Problem;
  /** True when the error was not one we expected: log it with its stack. */
  readonly unexpected: boolean;
}

/** Throw a ready-made problem from a handler (app.onError renders it as is). */
export class ProblemError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.code);
    this.name = 'ProblemError';
  }
}

export function errorToProblem(err: unknown): MappedError {
  if (err instanceof ProblemError) return { problem: err.problem, unexpected: false };
  if (err instanceof HTTPException) {
    const status = err.status;
    const code =
      status === 413
        ? 'body_too_large'
        : status === 415
          ? 'unsupported_media_type'
          : status === 400 && /json/i.test(err.message)
            ? 'malformed_json'
            : `http_${status}`;
    return { problem: problem(status, code, err.message || undefined), unexpected: status >= 500 };
  }
  if (err instanceof ZodError) return { problem: validationProblem(err), unexpected: false };
  if (isCodedError(err)) {
    const status = statusOf(err);
    const extra: Record<string, unknown> = {};
    const ctx = [err.details, err.detail].find((d) => typeof d === 'object' && d !== null && isPlainJson(d));
    if (ctx !== undefined) extra.details = ctx;
    const ctxRule = (ctx as { rule?: unknown } | undefined)?.rule;
    if (typeof err.rule === 'string') extra.rule = err.rule;
    else if (typeof ctxRule === 'string') extra.rule = ctxRule;
    else if (status === 402 || status === 429) extra.rule = err.code;
    if (status >= 500) return { problem: problem(status, err.code, 'internal error'), unexpected: true };
    return { problem: problem(status, err.code, err.message, extra), unexpected: false };
  }
  if (err instanceof SyntaxError) {
    return { problem: problem(400, 'malformed_json', 'request body is not valid JSON'), unexpected: false };
  }
  return { problem: problem(500, 'internal', 'internal error'), unexpected: true };
}

function isPlainJson(v: unknown): boolean {
  try {
    return JSON.stringify(v).length < 4096;
  } catch {
    return false;
  }
}

export function sendProblem(c: Context, p: Problem, headers: Record<string, string> = {}): Response {
  c.header('content-type', PROBLEM_CONTENT_TYPE);
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  return c.body(JSON.stringify(p), p.status as ContentfulStatusCode);
}

/** OpenAPI response entries for the refusals a route can produce. */
export function problemResponses(...statuses: number[]) {
  const out: Record<
    number,
    { description: string; content: Record<string, { schema: typeof ProblemSchema }> }
  > = {};
  for (const s of statuses) {
    out[s] = {
      description: TITLES[s] ?? 'Error',
      content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
    };
  }
  return out;
}
