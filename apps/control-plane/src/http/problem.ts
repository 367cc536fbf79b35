// RFC 9457 problem details: every refusal leaves this app as `application/problem+json` with a
// stable `code` of the one vocabulary (src/errors.ts: code → status). This module owns the shape, its zod
// schema (for the OpenAPI doc) and the mapping from thrown errors to problems. Unknown errors become a 500
// problem without a stack (logged).

import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ZodError } from 'zod';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../db/availability.js';
import {
  ControlPlaneError,
  type ControlPlaneErrorCode,
  ISSUE_LOCATIONS,
  type IssueLocation,
  REFUSALS,
  type ValidationIssue,
} from '../errors.js';
import { toControlPlaneError, validationRefusal } from '../services/boundary.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The part of the request an issue is about; `path` is then relative to it (a body field's, a parameter's name). */
export { ISSUE_LOCATIONS, type IssueLocation };

export const IssueSchema = z
  .object({
    code: z.string().openapi({ description: "zod's issue code, e.g. invalid_type, too_small." }),
    path: z.array(z.union([z.string(), z.number()])).openapi({
      description: 'The offending field: a parameter or header name, or the path into the body.',
    }),
    message: z.string().openapi({ description: 'Why the value is refused.' }),
    in: z
      .enum(ISSUE_LOCATIONS)
      .optional()
      .openapi({ description: 'Where the field is: query, path, header, cookie or body.' }),
  })
  .openapi('ValidationIssue');

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: 'urn:everdict:problem:not_found' }),
    title: z.string(),
    status: z.number().int(),
    code: z.string().openapi({ description: 'Stable machine-readable reason; switch on this.' }),
    detail: z.string().optional().openapi({
      description:
        'For people; a schema refusal names its first offending field and why (`issues` lists all).',
    }),
    rule: z.string().optional().openapi({ description: 'The admission rule that refused (402/429).' }),
    issues: z
      .array(IssueSchema)
      .optional()
      .openapi({ description: 'A schema refusal (validation_failed, out_of_range): every offending field.' }),
    reason: z
      .string()
      .optional()
      .openapi({ description: 'Why a part is unavailable (503), e.g. runner_unreachable.' }),
    details: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: "The refusal's own facts (e.g. an admission rule's `retry` hint)." }),
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

/** A problem of the one vocabulary (src/errors.ts): the status is the code's. */
export function problem(
  code: ControlPlaneErrorCode,
  detail?: string,
  extra: Record<string, unknown> = {},
): Problem {
  const status = REFUSALS[code].status;
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

/** hono's validation targets → the part of the request they read. */
const TARGET_LOCATIONS: Readonly<Record<string, IssueLocation>> = {
  query: 'query',
  param: 'path',
  header: 'header',
  cookie: 'cookie',
  json: 'body',
  form: 'body',
};

/**
 * A schema refusal of the request part hono's validator `target` names (query, param, header, cookie, json,
 * form): the one mapping (services/boundary.ts `validationRefusal`, which every service's schema refusal
 * goes through too) rendered — `out_of_range` when every issue is a number outside its bounds, else
 * `validation_failed`; `issues` (each with its `path` and `in`) and a `detail` naming the first offending
 * field and why.
 */
export function validationProblem(error: ZodError, target?: string): Problem {
  const location = target === undefined ? undefined : TARGET_LOCATIONS[target];
  const refusal = validationRefusal(error, location === undefined ? {} : { in: location });
  return issuesProblem(refusal.code, refusal.message, refusal.issues ?? []);
}

/** A schema refusal as a problem: its issues top-level, its message (naming the first field) the `detail`. */
function issuesProblem(
  code: ControlPlaneErrorCode,
  detail: string,
  issues: readonly ValidationIssue[],
): Problem {
  return problem(code, detail, { issues: issues.map((i) => ({ ...i, path: [...i.path] })) });
}

/** Throw a ready-made problem from a handler (app.onError renders it as is). */
export class ProblemError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.code);
    this.name = 'ProblemError';
  }
}

export interface MappedError {
  readonly problem: Problem;
  /** True when the error was not one we expected: log it with its stack. */
  readonly unexpected: boolean;
  /** Seconds for a `Retry-After` header, when the refusal knows when a retry can pass. */
  readonly retryAfterSeconds?: number;
}

const HTTP_CODES: Readonly<Record<number, ControlPlaneErrorCode>> = {
  400: 'malformed_json',
  413: 'body_too_large',
  415: 'unsupported_media_type',
};

/**
 * Any thrown value → a problem of the one vocabulary. Errors of the packages are first translated by the
 * services' boundary (one mapping); a value nobody mapped is a defect of ours: 500, logged, no detail.
 */
export function errorToProblem(thrown: unknown): MappedError {
  if (thrown instanceof ProblemError) return { problem: thrown.problem, unexpected: false };
  if (thrown instanceof HTTPException) {
    const status = thrown.status;
    if (status >= 500) return { problem: problem('internal', 'internal error'), unexpected: true };
    const code = HTTP_CODES[status] ?? 'bad_request';
    return { problem: problem(code, thrown.message || undefined), unexpected: false };
  }
  if (thrown instanceof ZodError) return { problem: validationProblem(thrown), unexpected: false };
  if (thrown instanceof SyntaxError) {
    return { problem: problem('malformed_json', 'request body is not valid JSON'), unexpected: false };
  }
  if (isDatabaseUnavailable(thrown)) {
    return {
      problem: problem('database_unavailable', 'the ledger database does not answer; retry shortly'),
      unexpected: false,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  const err = toControlPlaneError(thrown);
  if (err instanceof ControlPlaneError && err.issues !== undefined) {
    // A service's schema refusal: exactly the edge's shape (top-level `issues`, no `details`).
    return { problem: issuesProblem(err.code, err.message, err.issues), unexpected: false };
  }
  if (err instanceof ControlPlaneError && err.code === 'database_unavailable') {
    return {
      problem: problem(err.code, err.message),
      unexpected: false,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  if (!(err instanceof ControlPlaneError) || err.code === 'internal') {
    return { problem: problem('internal', 'internal error'), unexpected: true };
  }
  if (err.httpStatus === 503) {
    // A part we depend on is unavailable (sandbox compute, storage, draining): a named 503, not a defect.
    // Its details stay inside; only a stable `reason` (e.g. runner_unreachable) goes out.
    const reason = err.details.reason;
    return {
      problem: problem(err.code, err.message, typeof reason === 'string' ? { reason } : {}),
      unexpected: false,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  if (err.httpStatus >= 500) return { problem: problem('internal', 'internal error'), unexpected: true };
  const extra: Record<string, unknown> = {};
  const details = err.details;
  if (Object.keys(details).length > 0 && isPlainJson(details)) extra.details = details;
  if (typeof details.rule === 'string') extra.rule = details.rule;
  const seconds = retryAfterSeconds(details.retry);
  return {
    problem: problem(err.code, err.message, extra),
    unexpected: false,
    ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }),
  };
}

/** The gate's retry hint (`details.retry`, admission's RetryHint) as whole seconds, when it names a time. */
function retryAfterSeconds(retry: unknown): number | undefined {
  if (typeof retry !== 'object' || retry === null) return undefined;
  const { when, retryAfterMs } = retry as { when?: unknown; retryAfterMs?: unknown };
  if (when !== 'at' || typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs)) return undefined;
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
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
