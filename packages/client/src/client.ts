// The typed HTTP client of the control plane: openapi-fetch over the types generated at build time from
// the control plane's own OpenAPI document (scripts/generate.mjs), so a path, a body or an answer that
// drifts from the server is a type error here. Every non-2xx answer throws one ClientError carrying the
// problem's code and status; a transport failure is ClientError `network`.
import createFetchClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from '../generated/schema.js';
import { ClientError, errorFromResponse } from './errors.js';

export type { components, paths } from '../generated/schema.js';

export interface ClientOptions {
  /** The control plane's base URL, e.g. `http://127.0.0.1:8787`. */
  readonly baseUrl: string;
  /** An API key, a runner credential or the service token: sent as `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** A fetch to use instead of the global one. */
  readonly fetch?: typeof globalThis.fetch;
  /** Extra headers on every request. */
  readonly headers?: Record<string, string>;
}

export type EverdictClient = Client<paths>;

/** The answer's text; a body that breaks off is `network` (the answer never fully arrived). */
async function bodyText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ClientError('network', 0, `the answer broke off: ${message}`);
  }
}

/**
 * Turns every non-2xx answer into a thrown ClientError, every transport failure into `network` — and a 2xx
 * read as JSON whose body breaks off (`network`) or is not JSON (`bad_response`, e.g. an HTML page at the
 * wrong URL) into a ClientError too, never a bare TypeError or SyntaxError.
 */
const refusals: Middleware = {
  async onResponse({ response, options }) {
    if (response.ok) {
      if (options.parseAs !== 'json' || response.body === null) return undefined;
      const text = await bodyText(response);
      if (text.trim().length > 0) {
        try {
          JSON.parse(text);
        } catch {
          const type = response.headers.get('content-type') ?? 'no content type';
          throw new ClientError('bad_response', response.status, `the answer is not JSON (${type})`);
        }
      }
      const { status, statusText, headers } = response;
      return new Response(text.length > 0 ? text : null, { status, statusText, headers });
    }
    const text = await bodyText(response);
    let body: unknown;
    try {
      body = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    throw errorFromResponse(response, body);
  },
  onError({ error }) {
    if (error instanceof ClientError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new ClientError('network', 0, `no answer from the control plane: ${message}`);
  },
};

/**
 * `client.GET('/runs/{id}', {params: {path: {id}}})` etc. (openapi-fetch's API): answers resolve with
 * `{data, response}`; refusals throw ClientError.
 */
export function createClient(options: ClientOptions): EverdictClient {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use(refusals);
  return client;
}

/** The data of an answer that the middleware let through (a 2xx); `bad_response` when it has none. */
export function dataOf<T>(result: { data?: T; response: Response }): T {
  if (result.data === undefined) {
    throw new ClientError('bad_response', result.response.status, 'the answer has no body');
  }
  return result.data;
}
