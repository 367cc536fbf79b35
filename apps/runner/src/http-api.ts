// The RunnerApi over HTTP: @everdict/client (typed from the control plane's OpenAPI document) with the
// runner's credential. Artifacts go up as a streamed request body (plain fetch with `duplex: 'half'`,
// because the document declares no body for them: the bytes are raw); refusals are ClientErrors either way.
import type { Readable } from 'node:stream';
import { Readable as NodeReadable } from 'node:stream';
import {
  ClientError,
  createClient,
  dataOf,
  type EverdictClient,
  errorFromResponse,
  Problem,
} from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import type { CompletionResult, CompletionsReply, RunnerApi } from './port.js';
import {
  type Capabilities,
  type CompleteBody,
  CompletionsAnswer,
  HeartbeatAnswer,
  type Lease,
  LeasesAnswer,
} from './protocol.js';

export class HttpRunnerApi implements RunnerApi {
  readonly #client: EverdictClient;
  constructor(
    readonly baseUrl: string,
    readonly credential: string,
  ) {
    this.#client = createClient({ baseUrl, token: credential });
  }

  async leases(free: number, waitMs: number, signal?: AbortSignal): Promise<Lease[]> {
    const answer = await this.#client.POST('/runner/v1/leases', {
      body: { free, waitMs },
      ...(signal ? { signal } : {}),
    });
    return LeasesAnswer.parse(dataOf(answer)).leases;
  }

  async heartbeat(leases: { runId: string; epoch: number }[]) {
    return HeartbeatAnswer.parse(
      dataOf(await this.#client.POST('/runner/v1/heartbeat', { body: { leases } })),
    );
  }

  async events(runId: string, epoch: number, events: TraceEvent[]): Promise<void> {
    await this.#client.POST('/runner/v1/runs/{id}/events', {
      params: { path: { id: runId } },
      body: { epoch, events },
    });
  }

  async artifact(runId: string, epoch: number, path: string, body: Readable) {
    const url = new URL(
      `${this.baseUrl.replace(/\/+$/, '')}/runner/v1/runs/${encodeURIComponent(runId)}/artifacts`,
    );
    url.searchParams.set('epoch', String(epoch));
    url.searchParams.set('path', path);
    const response = await fetch(url, {
      method: 'PUT',
      headers: { authorization: `Bearer ${this.credential}`, 'content-type': 'application/octet-stream' },
      body: NodeReadable.toWeb(body) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    const text = await response.text();
    const json: unknown = text ? JSON.parse(text) : undefined;
    if (!response.ok) throw errorFromResponse(response, json);
    return json as { path: string; address: string; size: number };
  }

  async complete(runId: string, body: CompleteBody): Promise<void> {
    await this.#client.POST('/runner/v1/runs/{id}/complete', {
      params: { path: { id: runId } },
      body: body as unknown as Record<string, unknown>,
    });
  }

  async completeMany(
    items: (CompleteBody & { runId: string })[],
    next?: { free: number },
  ): Promise<CompletionsReply> {
    const answer = await this.#client.POST('/runner/v1/completions', {
      body: { items, ...(next ? { next } : {}) } as unknown as Record<string, unknown>,
    });
    const parsed = CompletionsAnswer.parse(dataOf(answer));
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

/** Pairs with a control plane: the token is the credential of this one call. */
export async function pairRunner(
  baseUrl: string,
  input: { token: string; publicKey: string; name: string; capabilities: Capabilities },
): Promise<{ runnerId: string; credential: string }> {
  const client = createClient({ baseUrl });
  return dataOf(await client.POST('/runners/pair', { body: input }));
}
