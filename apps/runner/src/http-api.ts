// The RunnerApi over HTTP with the runner's credential. The daemon's calls — leases, heartbeat, events,
// completions — go through `RunnerTransport` (node:http/https on a keep-alive agent, bodies typed by
// @everdict/client's `paths`, generated from the control plane's OpenAPI document, so a path or a body that
// drifts from the server is still a type error); refusals are the client's ClientError, made by its
// `errorFromResponse`, and a call that got no answer is ClientError `network`, as with @everdict/client.
// Measured (README, "Figures"): a completion batch's call through openapi-fetch over fetch (a Request, its
// web streams, a Response and its clone per call) cost the runner ≈ 0.6–0.8 ms of CPU more than this. The rest
// — pairing, the single `…/complete` — uses @everdict/client itself; artifacts go up as a streamed request
// body through the same transport (`put`: the document declares no body for them, the bytes are raw).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  ClientError,
  createClient,
  dataOf,
  type EverdictClient,
  errorFromResponse,
  Problem,
  type paths,
} from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { z } from 'zod';
import type { BatchFile, CompletionResult, CompletionsReply, RunnerApi } from './port.js';
import {
  type Capabilities,
  type CompleteBody,
  CompletionsAnswer,
  HeartbeatAnswer,
  type Lease,
  LeasesAnswer,
} from './protocol.js';

/** The daemon's POST routes, and what the generated document says each takes and answers (200). */
type RunnerRoute =
  | '/runner/v1/leases'
  | '/runner/v1/heartbeat'
  | '/runner/v1/completions'
  | '/runner/v1/runs/{id}/events'
  | '/runner/v1/runs/{id}/artifacts:batch';
type BodyOf<R extends RunnerRoute> = paths[R]['post'] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;
type AnswerOf<R extends RunnerRoute> = paths[R]['post'] extends {
  responses: { 200: { content: { 'application/json': infer A } } };
}
  ? A
  : unknown;

/**
 * An idle kept socket is closed after this long — or 1 s before the server's `Keep-Alive: timeout=N` hint when
 * that is sooner (Node applies the hint only under an agent timeout) — so it is not reused just as the server
 * closes it. Below the usual proxies' idle timeouts too (60 s and more); the control plane's own is 65 s.
 */
export const IDLE_SOCKET_MS = 30_000;

/** JSON POSTs to the control plane over one keep-alive agent (node:http or node:https by the URL). */
export class RunnerTransport {
  readonly #base: URL;
  readonly #request: typeof httpRequest;
  readonly #agent: HttpAgent;
  readonly #auth: string;

  constructor(baseUrl: string, credential: string) {
    this.#base = new URL(baseUrl.replace(/\/+$/, ''));
    const https = this.#base.protocol === 'https:';
    this.#request = https ? httpsRequest : httpRequest;
    this.#agent = https
      ? new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS })
      : new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
    this.#auth = `Bearer ${credential}`;
  }

  /**
   * POSTs `body` as JSON to `route` (under the base URL's path; `{id}` filled with `id`); resolves with the
   * parsed 2xx answer.
   */
  post<R extends RunnerRoute>(
    route: R,
    body: BodyOf<R>,
    options: { id?: string; signal?: AbortSignal } = {},
  ): Promise<AnswerOf<R>> {
    const path = options.id === undefined ? route : route.replace('{id}', encodeURIComponent(options.id));
    const payload = Buffer.from(JSON.stringify(body));
    const headers = { 'content-type': 'application/json', 'content-length': payload.length };
    return this.#send('POST', path, headers, payload, options.signal) as Promise<AnswerOf<R>>;
  }

  /**
   * PUTs `body` (raw bytes, chunked) to `path` (with its query) as it streams: `pipeline` writes a chunk only
   * when the socket has taken the last, so an upload holds about a buffer of it, whatever its size. (fetch's
   * streamed request body on Node 20 reads its source as fast as it can: a 300 MiB upload held ≈ 330 MiB; README,
   * "Artifacts".) An answer that comes before the body has all gone (a 413 at the bound) is the answer.
   */
  put(path: string, body: Readable, signal?: AbortSignal): Promise<unknown> {
    return this.#send('PUT', path, { 'content-type': 'application/octet-stream' }, body, signal);
  }

  #send(
    method: 'POST' | 'PUT',
    path: string,
    headers: Record<string, string | number>,
    body: Buffer | Readable,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      let answered = false;
      let responded = false;
      const fail = (err: unknown) => {
        if (answered) return;
        answered = true;
        if (err instanceof ClientError) return reject(err);
        const message = err instanceof Error ? err.message : String(err);
        reject(new ClientError('network', 0, `no answer from the control plane: ${message}`));
      };
      if (signal?.aborted) return fail(signal.reason ?? new Error('aborted'));
      const req = this.#request(
        {
          protocol: this.#base.protocol,
          hostname: this.#base.hostname,
          port: this.#base.port,
          path: `${this.#base.pathname === '/' ? '' : this.#base.pathname}${path}`,
          method,
          agent: this.#agent,
          headers: { authorization: this.#auth, ...headers },
          ...(signal ? { signal } : {}),
        },
        (res: IncomingMessage) => {
          responded = true;
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('error', fail);
          res.on('end', () => {
            const text = Buffer.concat(parts).toString('utf8');
            let json: unknown;
            try {
              json = text.length > 0 ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) return fail(errorFromResponse(responseOf(res), json));
            if (json === undefined)
              return fail(new ClientError('bad_response', status, 'the answer has no body'));
            answered = true;
            resolve(json);
          });
        },
      );
      if (Buffer.isBuffer(body)) {
        req.on('error', fail);
        req.end(body);
        return;
      }
      // A body cut short — its source failed, or the server answered early and closed — is an error only
      // when no answer comes: an early answer (its 'response') is read to its end as above.
      req.on('error', (err) => {
        if (!responded) fail(err);
      });
      pipeline(body, req).catch((err: unknown) => {
        if (!responded) fail(err);
      });
    });
  }

  /** Closes the agent's idle sockets. */
  close(): void {
    this.#agent.destroy();
  }
}

/** What `errorFromResponse` reads of an answer: its status and headers. */
function responseOf(res: IncomingMessage): Response {
  return {
    status: res.statusCode ?? 0,
    headers: {
      get: (name: string) => {
        const v = res.headers[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
      },
    },
  } as unknown as Response;
}

/** What the artifact route answers: the stored file's path, content address and size. */
const StoredArtifact = z.object({
  path: z.string(),
  address: z.string().regex(/^blake3:[0-9a-f]{64}$/),
  size: z.int().min(0),
});

/** What the artifact batch route answers: per file, in order, stored (201) or past the bound (413). */
const BatchAnswer = z.object({
  results: z.array(
    z.discriminatedUnion('status', [
      StoredArtifact.extend({ status: z.literal(201) }),
      z.object({ path: z.string(), status: z.literal(413), maxBytes: z.int().min(0) }),
    ]),
  ),
});

/**
 * A 2xx answer as `schema` reads it — or ClientError `bad_response` (the answer's status) naming what is wrong:
 * an answer the runner cannot read is a typed refusal of the call, never a ZodError nor a value taken on trust.
 */
function answerOf<T>(schema: z.ZodType<T>, json: unknown, what: string, status = 200): T {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  throw new ClientError(
    'bad_response',
    status,
    `the control plane's answer to ${what} is malformed${at}: ${issue?.message ?? 'invalid'}`,
  );
}

export class HttpRunnerApi implements RunnerApi {
  readonly #client: EverdictClient;
  readonly #http: RunnerTransport;
  constructor(
    readonly baseUrl: string,
    readonly credential: string,
  ) {
    this.#client = createClient({ baseUrl, token: credential });
    this.#http = new RunnerTransport(baseUrl, credential);
  }

  async leases(free: number, waitMs: number, signal?: AbortSignal): Promise<Lease[]> {
    const answer = await this.#http.post('/runner/v1/leases', { free, waitMs }, signal ? { signal } : {});
    return answerOf(LeasesAnswer, answer, 'a lease request').leases;
  }

  async heartbeat(leases: { runId: string; epoch: number }[], signal?: AbortSignal) {
    return answerOf(
      HeartbeatAnswer,
      await this.#http.post('/runner/v1/heartbeat', { leases }, signal ? { signal } : {}),
      'a heartbeat',
    );
  }

  async events(runId: string, epoch: number, events: TraceEvent[], signal?: AbortSignal): Promise<void> {
    await this.#http.post(
      '/runner/v1/runs/{id}/events',
      { epoch, events },
      { id: runId, ...(signal ? { signal } : {}) },
    );
  }

  async artifact(runId: string, epoch: number, path: string, body: Readable, signal?: AbortSignal) {
    const query = new URLSearchParams({ epoch: String(epoch), path });
    const answer = await this.#http.put(
      `/runner/v1/runs/${encodeURIComponent(runId)}/artifacts?${query}`,
      body,
      signal,
    );
    return answerOf(StoredArtifact, answer, 'an artifact upload');
  }

  async artifacts(runId: string, epoch: number, files: readonly BatchFile[], signal?: AbortSignal) {
    const answer = await this.#http.post(
      '/runner/v1/runs/{id}/artifacts:batch',
      { epoch, files: files.map((f) => ({ path: f.path, content: f.bytes.toString('base64') })) },
      { id: runId, ...(signal ? { signal } : {}) },
    );
    const { results } = answerOf(BatchAnswer, answer, 'an artifact batch');
    if (results.length !== files.length || results.some((r, i) => r.path !== files[i]!.path))
      throw new ClientError(
        'bad_response',
        200,
        'the answer to an artifact batch is not one result per file, in order',
      );
    return results;
  }

  async complete(runId: string, body: CompleteBody, signal?: AbortSignal): Promise<void> {
    await this.#client.POST('/runner/v1/runs/{id}/complete', {
      params: { path: { id: runId } },
      body: body as unknown as Record<string, unknown>,
      ...(signal ? { signal } : {}),
    });
  }

  async completeMany(
    items: (CompleteBody & { runId: string })[],
    next?: { free: number },
    signal?: AbortSignal,
  ): Promise<CompletionsReply> {
    const answer = await this.#http.post(
      '/runner/v1/completions',
      { items, ...(next ? { next } : {}) },
      signal ? { signal } : {},
    );
    const parsed = answerOf(CompletionsAnswer, answer, 'a completion batch');
    if (parsed.results.length !== items.length)
      throw new ClientError(
        'bad_response',
        200,
        `the control plane answered ${parsed.results.length} results for ${items.length} completions`,
      );
    return {
      results: parsed.results.map(resultOf),
      ...(parsed.leases ? { leases: parsed.leases } : {}),
    };
  }
}

/** One result of `POST /runner/v1/completions` for the port: a refusal becomes the ClientError it would have thrown alone. */
function resultOf(r: CompletionsAnswer['results'][number]): CompletionResult {
  if (r.outcome !== 'refused') return { outcome: r.outcome };
  const p = Problem.safeParse(r.problem);
  return {
    outcome: 'refused',
    error: p.success
      ? new ClientError(p.data.code, r.status, p.data.detail ?? p.data.title ?? p.data.code, p.data)
      : new ClientError('bad_response', r.status, `completion of ${r.runId} refused without a problem`),
  };
}

/**
 * Pairs with a control plane: the token is the credential of this one call; `signature` proves the caller holds
 * the key (`pairingSignature` of @everdict/client/host-identity).
 */
export async function pairRunner(
  baseUrl: string,
  input: { token: string; publicKey: string; signature: string; name: string; capabilities: Capabilities },
): Promise<{ runnerId: string; credential: string }> {
  const client = createClient({ baseUrl });
  return dataOf(await client.POST('/runners/pair', { body: input }));
}
