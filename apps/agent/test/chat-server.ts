// A local HTTP server speaking the chat-completions wire format (POST /v1/chat/completions, streamed as
// SSE `data:` chunks ending in `data: [DONE]`): each request is answered by the next scripted response,
// as chunks — text split into deltas, tool-call arguments split into pieces keyed by `index`, and usage in
// a last chunk with `choices: []` when the client asked for it. It records every request body.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type WireResponse =
  | {
      readonly text?: string;
      readonly toolCalls?: readonly { id: string; name: string; arguments: string }[];
      readonly usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
    }
  | { readonly status: number; readonly error: string };

export interface ChatServer {
  readonly baseURL: string;
  readonly requests: Record<string, unknown>[];
  close(): Promise<void>;
}

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });

function pieces(s: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out.length ? out : [''];
}

export async function startChatServer(responses: WireResponse[]): Promise<ChatServer> {
  const requests: Record<string, unknown>[] = [];
  let next = 0;
  const server: Server = createServer(async (req, res) => {
    const text = await body(req);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    const request = JSON.parse(text) as Record<string, unknown>;
    requests.push(request);
    const r = responses[next++];
    if (!r) {
      res
        .writeHead(500, { 'content-type': 'application/json' })
        .end('{"error":{"message":"no response left"}}');
      return;
    }
    if ('status' in r) {
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: r.error, type: 'server_error' } }));
      return;
    }
    const id = `chatcmpl-${next}`;
    const model = String(request.model);
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1764547200, model, choices, ...extra })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
    for (const p of r.text ? pieces(r.text, 5) : [])
      res.write(chunk([{ index: 0, delta: { content: p }, finish_reason: null }]));
    (r.toolCalls ?? []).forEach((c, index) => {
      res.write(
        chunk([
          {
            index: 0,
            delta: {
              tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }],
            },
            finish_reason: null,
          },
        ]),
      );
      for (const p of pieces(c.arguments, 7))
        res.write(
          chunk([
            { index: 0, delta: { tool_calls: [{ index, function: { arguments: p } }] }, finish_reason: null },
          ]),
        );
    });
    const finish = r.toolCalls?.length ? 'tool_calls' : 'stop';
    res.write(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
    const wantsUsage = (request.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
    if (wantsUsage && r.usage) {
      const { cached_tokens, ...u } = r.usage;
      res.write(
        chunk([], {
          usage: {
            ...u,
            total_tokens: u.prompt_tokens + u.completion_tokens,
            ...(cached_tokens ? { prompt_tokens_details: { cached_tokens } } : {}),
          },
        }),
      );
    }
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
