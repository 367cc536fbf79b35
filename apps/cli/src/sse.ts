// Server-Sent Events over fetch (Node 20 has no EventSource): GET with `Accept: text/event-stream` and the
// API key in the Authorization header; yields each event until the server ends the stream or `signal` aborts.
import { ClientError, errorFromResponse } from '@everdict/client';
import { anySignal } from 'any-signal';

export interface SseEvent {
  readonly id?: string;
  readonly event: string;
  readonly data: string;
}

/** Parses a text/event-stream body (split anywhere) into events; comments (`: keep-alive`) are skipped. */
export class SseParser {
  private buffer = '';
  private id: string | undefined;
  private event = 'message';
  private data: string[] = [];

  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    for (;;) {
      const nl = this.buffer.search(/\r\n|\n|\r/);
      if (nl < 0) break;
      const lineText = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + (this.buffer.startsWith('\r\n', nl) ? 2 : 1));
      if (lineText === '') {
        if (this.data.length > 0)
          out.push({
            ...(this.id === undefined ? {} : { id: this.id }),
            event: this.event,
            data: this.data.join('\n'),
          });
        this.event = 'message';
        this.data = [];
        continue;
      }
      if (lineText.startsWith(':')) continue;
      const colon = lineText.indexOf(':');
      const field = colon < 0 ? lineText : lineText.slice(0, colon);
      let value = colon < 0 ? '' : lineText.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
      else if (field === 'id') this.id = value;
    }
    return out;
  }
}

/**
 * `headersWithinMs` bounds the wait for the answer's head (and a refusal's body): a server that takes the
 * socket but never answers is `network`, not a wait forever. The stream itself, once open, is not bounded.
 */
export async function* streamEvents(
  url: string,
  key: string | undefined,
  signal?: AbortSignal,
  headersWithinMs?: number,
): AsyncGenerator<SseEvent> {
  const unanswered = new AbortController();
  // Joined for this stream only, and cleared when it ends (`AbortSignal.any` would keep it joined to the
  // caller's signal — the process's Ctrl-C — for the process's life: nodejs/node#55351).
  const both = anySignal([signal, unanswered.signal]);
  try {
    yield* openStream(url, key, { signal, both, unanswered }, headersWithinMs);
  } finally {
    both.clear();
  }
}

async function* openStream(
  url: string,
  key: string | undefined,
  {
    signal,
    both,
    unanswered,
  }: { signal: AbortSignal | undefined; both: AbortSignal; unanswered: AbortController },
  headersWithinMs?: number,
): AsyncGenerator<SseEvent> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (key) headers.authorization = `Bearer ${key}`;
  const timer =
    headersWithinMs === undefined ? undefined : setTimeout(() => unanswered.abort(), headersWithinMs);
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: both });
  } catch (e) {
    clearTimeout(timer);
    if (signal?.aborted) return;
    const why = unanswered.signal.aborted ? `no answer within ${headersWithinMs} ms` : (e as Error).message;
    throw new ClientError('network', 0, `no answer from the control plane: ${why}`);
  }
  if (!res.ok) {
    const text = await res.text().catch((e: unknown) => {
      throw new ClientError('network', 0, `the answer broke off: ${(e as Error).message}`);
    });
    clearTimeout(timer);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    throw errorFromResponse(res, body);
  }
  clearTimeout(timer);
  if (!res.body) return;
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      for (const e of parser.push(decoder.decode(value, { stream: true }))) yield e;
    }
  } catch (e) {
    if (signal?.aborted) return;
    throw new ClientError('network', 0, `the stream broke: ${(e as Error).message}`);
  } finally {
    // Left early (the consumer broke out, or the stream failed): close the body, and with it the socket.
    if (!ended) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
