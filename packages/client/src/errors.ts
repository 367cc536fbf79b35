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
        z.object({ code: z.string(), path: z.array(z.union([z.string(), z.number()])), message: z.string() }),
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

/** The ClientError for a non-2xx answer; `body` is what openapi-fetch parsed (or undefined). */
export function errorFromResponse(response: Response, body: unknown): ClientError {
  const retry = response.headers.get('retry-after');
  const retryAfter = retry !== null && /^\d+$/.test(retry) ? Number(retry) : undefined;
  const parsed = Problem.safeParse(body);
  if (parsed.success) {
    const p = parsed.data;
    return new ClientError(p.code, response.status, p.detail ?? p.title ?? p.code, p, retryAfter);
  }
  return new ClientError(
    'bad_response',
    response.status,
    `HTTP ${response.status} without a problem document`,
    undefined,
    retryAfter,
  );
}
