// A local node:http server standing in for the control plane where the real one cannot be made to misbehave
// on cue (a call left unanswered, an event stream that drops, a Retry-After): each request is recorded with
// when it came and whether its socket has closed; answers use the control plane's real shapes.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach } from 'vitest';

export interface Hit {
  readonly method: string;
  readonly path: string;
  readonly at: number;
  closed: boolean;
}

export interface FakeServer {
  readonly url: string;
  readonly hits: Hit[];
  /** The hits of one route (`GET /runs/run_1/events`). */
  of(route: string): Hit[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, hit: Hit) => void;

export async function fakeServer(handler: Handler): Promise<FakeServer> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const hit: Hit = { method: req.method ?? '', path: req.url ?? '', at: performance.now(), closed: false };
    hits.push(hit);
    res.on('close', () => {
      hit.closed = true;
    });
    // The body is read before the handler answers (a POST's JSON), so a handler sees a whole request.
    req.resume();
    req.on('end', () => handler(req, res, hit));
  });
  // A WebSocket upgrade is recorded and never answered (a terminal that hangs in its handshake).
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req, socket) => {
    const hit: Hit = { method: 'UPGRADE', path: req.url ?? '', at: performance.now(), closed: false };
    hits.push(hit);
    upgraded.add(socket);
    socket.resume(); // read on, so the client's close is seen
    socket.on('end', () => socket.destroy());
    socket.on('close', () => {
      hit.closed = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    of: (route) => hits.filter((h) => `${h.method} ${h.path}` === route),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const socket of upgraded) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, {
    'content-type': status >= 400 ? 'application/problem+json' : 'application/json',
    ...headers,
  });
  res.end(JSON.stringify(body));
}

/** A problem+json refusal as the control plane sends it. */
export function problem(
  res: ServerResponse,
  status: number,
  code: string,
  headers: Record<string, string> = {},
) {
  json(res, status, { type: 'about:blank', title: code, status, code, detail: `${code} (fake)` }, headers);
}

/** Opens an SSE answer; the caller writes events and ends it (or never does). */
export function sse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(': open\n\n');
}

/** The answer of `POST /runs` (CreatedRun). */
export const created = (id: string) => ({
  run: { id, status: 'queued' },
  admission: { class: 'standard' },
});

/** Waits until `check()` holds (polling a condition, not sleeping a guessed time), or fails saying what. */
export async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A fake control plane per test of the calling file (closed after each), and the environment that points the
 * CLI at it: `const start = fakeServers();` then `const { s, env } = await start(handler)`.
 */
export function fakeServers(): (handler: Handler) => Promise<{ s: FakeServer; env: Record<string, string> }> {
  let server: FakeServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async (handler) => {
    server = await fakeServer(handler);
    return { s: server, env: { EVERDICT_URL: server.url, EVERDICT_API_KEY: 'evd_test_0123456789abcdef' } };
  };
}
