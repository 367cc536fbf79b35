// Bodies beyond the limit are a 413 problem, decided before anything parses them — and the connection stays
// usable: the refused body is read off the wire and dropped before the 413 is sent (up to DRAIN_LIMIT_BYTES),
// so the next request on a keep-alive connection is parsed from where it starts. (hono's bodyLimit answers
// with the body unread; the server then gives the client 500 ms to finish sending and closes the connection
// under it.) A body past DRAIN_LIMIT_BYTES is not worth reading: its 413 says `Connection: close`.
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';
import { problem, sendProblem } from './problem.js';

/** A refused body larger than this is not drained: the connection is closed instead. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** Read and drop the rest of a body; true when it ended within DRAIN_LIMIT_BYTES (else it is cancelled). */
async function drained(reader: ReadableStreamDefaultReader<Uint8Array>, already: number): Promise<boolean> {
  let read = already;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return true;
      read += value.byteLength;
      if (read > DRAIN_LIMIT_BYTES) {
        await reader.cancel().catch(() => undefined);
        return false;
      }
    }
  } catch {
    return false; // the client went away
  }
}

export function bodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  const tooLarge = (c: Context<AppEnv>, keepAlive: boolean) =>
    sendProblem(
      c,
      problem('body_too_large', `request bodies are limited to ${maxBytes} bytes`),
      keepAlive ? {} : { connection: 'close' },
    );
  return async (c, next) => {
    // The headers decide first: touching `c.req.raw.body` makes @hono/node-server build a whole web Request
    // around the socket (a ReadableStream, an AbortController), which a body within its declared length never
    // needs — the JSON validator reads it straight off the socket. GET and HEAD carry no body.
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const declared = c.req.header('content-length');
    if (declared !== undefined && !c.req.raw.headers.has('transfer-encoding')) {
      const size = Number(declared);
      if (size <= maxBytes) return next(); // the HTTP parser holds the body to its declared length
      if (size > DRAIN_LIMIT_BYTES) return tooLarge(c, false);
      const body = c.req.raw.body;
      if (!body) return next();
      return tooLarge(c, await drained(body.getReader(), 0));
    }
    const body = c.req.raw.body;
    if (!body) return next();
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > maxBytes) return tooLarge(c, await drained(reader, size));
        chunks.push(value);
      }
    } catch {
      return sendProblem(c, problem('bad_request', 'the request body could not be read'));
    }
    c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks, size) });
    return next();
  };
}
