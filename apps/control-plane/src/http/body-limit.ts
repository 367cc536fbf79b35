// Bodies beyond the limit are a 413 problem, decided before anything parses them — and the connection
// stays usable: the refused body is read off the wire and dropped (up to DRAIN_LIMIT_BYTES), so the next
// request on a keep-alive connection is parsed from where it starts. (hono's bodyLimit leaves the body
// unread; the server then gives up draining it and closes the connection under the client.)
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';
import { problem, sendProblem } from './problem.js';

/** A refused body larger than this is not drained: the connection is closed instead. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

async function discard(reader: ReadableStreamDefaultReader<Uint8Array>, already: number): Promise<void> {
  let read = already;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > DRAIN_LIMIT_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // the client went away: nothing left to drain
  }
}

export function bodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  const tooLarge = (c: Context<AppEnv>) =>
    sendProblem(c, problem('body_too_large', `request bodies are limited to ${maxBytes} bytes`));
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const declared = c.req.header('content-length');
    if (declared !== undefined && !c.req.raw.headers.has('transfer-encoding')) {
      if (Number(declared) <= maxBytes) return next(); // the HTTP parser holds the body to its length
      void discard(body.getReader(), 0);
      return tooLarge(c);
    }
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > maxBytes) {
          void discard(reader, size);
          return tooLarge(c);
        }
        chunks.push(value);
      }
    } catch {
      return sendProblem(c, problem('bad_request', 'the request body could not be read'));
    }
    c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks, size) });
    return next();
  };
}
