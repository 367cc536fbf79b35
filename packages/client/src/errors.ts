// The one error of @everdict/client: a refusal of the control plane (its problem+json `code` and HTTP
// `status`), or a call that never got an answer (`network`) or got one that is not the documented shape
// (`bad_response`).
import { z } from 'zod';

/** RFC 9457 problem details as the control plane sends them (extra members are kept). */
export const Problem = z
  .object({
    type: z.string().optional(),
    title: z.string().optional(),
    status: z.int(),
    code: z.string().min(1),
    detail: z.string().optional(),
    rule: z.string().optional(),
    issues: z
      .array(
        z.object({
          code: z.string(),
          /** The offending field: a parameter or header name, or the path into the body. */
          path: z.array(z.union([z.string(), z.number()])),
          /** Why the value is refused. */
          message: z.string(),
          /** Where the field is: query, path, header, cookie or body (open: an older server sends none). */
          in: z.string().optional(),
        }),
      )
      .optional(),
  })
  .catchall(z.unknown());
export type Problem = z.infer<typeof Problem>;

/** Codes the client itself produces (the server's codes are open strings: its vocabulary grows). */
export const CLIENT_ERROR_CODES = ['network', 'bad_response'] as const;
export type ClientOwnCode = (typeof CLIENT_ERROR_CODES)[number];

export class ClientError extends Error {
  override readonly name = 'ClientError';
  constructor(
    /** The problem's `code` (e.g. `stale_lease`, `not_found`), or `network` / `bad_response`. */
    readonly code: string,
    /** The HTTP status; 0 when no answer arrived. */
    readonly status: number,
    message: string,
    /** The whole problem document, when the server sent one. */
    readonly problem?: Problem,
    /** Seconds from a `Retry-After` header, when the server sent one. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function isClientError(err: unknown, code?: string): err is ClientError {
  return err instanceof ClientError && (code === undefined || err.code === code);
}

/**
 * Seconds a `Retry-After` header asks for: delay-seconds (`120`) or an HTTP-date (RFC 9110 §10.2.3; a date
 * already past is 0). Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  const at = Date.parse(v);
  if (!/[a-z]/i.test(v) || !Number.isFinite(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

const OPTIONAL_MEMBERS = ['type', 'title', 'detail', 'rule', 'issues'] as const;

/**
 * The body as a Problem. A body with a stable `code` stays that code even when an optional member is not the
 * documented shape (the member is dropped) or `status` is missing (the answer's status is used): a refusal
 * never degrades to `bad_response` over a detail.
 */
function problemOf(body: unknown, status: number): Problem | undefined {
  const strict = Problem.safeParse(body);
  if (strict.success) return strict.data;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const b: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  if (!Number.isInteger(b.status)) b.status = status;
  for (const key of OPTIONAL_MEMBERS) {
    if (key in b && !Problem.shape[key].safeParse(b[key]).success) delete b[key];
  }
  const lenient = Problem.safeParse(b);
  return lenient.success ? lenient.data : undefined;
}

/** The ClientError for a non-2xx answer; `body` is what openapi-fetch parsed (or undefined). */
export function errorFromResponse(response: Response, body: unknown): ClientError {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  const p = problemOf(body, response.status);
  if (p) return new ClientError(p.code, response.status, p.detail ?? p.title ?? p.code, p, retryAfter);
  return new ClientError(
    'bad_response',
    response.status,
    `HTTP ${response.status} without a problem document`,
    undefined,
    retryAfter,
  );
}
