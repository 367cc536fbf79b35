// The console's connection: JSON calls and Server-Sent Events read with fetch streaming, both carrying the
// API key as `Authorization: Bearer` (EventSource cannot send headers). A refusal becomes an ApiError with
// the problem's status, code, detail and rule.

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
    this.code = this.problem.code || (status === 0 ? 'network' : 'bad_response');
  }
}

/** A refused answer as the ApiError of its problem document (none when its body is not JSON). */
async function refusal(res) {
  let problem;
  try {
    problem = await res.json();
  } catch {
    problem = undefined;
  }
  return new ApiError(res.status, problem);
}

export function api(key) {
  const headers = (extra) => ({ authorization: `Bearer ${key}`, ...extra });
  async function call(method, path, body, extraHeaders = {}) {
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: headers(
          body === undefined ? extraHeaders : { 'content-type': 'application/json', ...extraHeaders },
        ),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new ApiError(0, { detail: String(e) });
    }
    const text = await res.text();
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) throw new ApiError(res.status, json);
    return json;
  }

  /** A binary answer as a Blob (an artifact's bytes); a body that breaks off rejects, as a refusal does. */
  async function blob(path) {
    let res;
    try {
      res = await fetch(path, { headers: headers() });
    } catch (e) {
      throw new ApiError(0, { detail: String(e) });
    }
    if (!res.ok) throw await refusal(res);
    try {
      return await res.blob();
    } catch (e) {
      throw new ApiError(0, { code: 'broken_off', detail: `the bytes broke off: ${e}` });
    }
  }

  /** Reads an SSE endpoint until it ends or `signal` aborts; calls onEvent({id, event, data}). */
  async function stream(path, onEvent, signal) {
    const res = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), signal });
    if (!res.ok) throw await refusal(res);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let ev = { event: 'message', data: [], id: undefined };
    try {
      await read();
    } finally {
      // Also when onEvent throws: the connection is released, not left open.
      reader.cancel().catch(() => undefined);
    }
    async function read() {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (ev.data.length) onEvent({ id: ev.id, event: ev.event, data: ev.data.join('\n') });
            ev = { event: 'message', data: [], id: ev.id };
            continue;
          }
          if (line.startsWith(':')) continue;
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'data') ev.data.push(val);
          else if (field === 'event') ev.event = val;
          else if (field === 'id') ev.id = val;
        }
      }
    }
  }

  return { blob, call, stream };
}

/** The wait before retry `attempt` (0, 1, …) of a dropped feed: 1 s doubling to 30 s, each jittered to 50–100 %. */
export function backoff(attempt, random = Math.random) {
  const base = Math.min(30_000, 1000 * 2 ** Math.min(attempt, 15));
  return Math.round(base * (0.5 + random() / 2));
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

const parse = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** An SSE `error` event as the ApiError it stands for (`{code: "unauthorized"}`: the key was revoked). */
export function errorEvent(e) {
  const problem = parse(e.data) ?? {};
  return new ApiError(problem.code === 'unauthorized' ? 401 : 502, problem);
}

/**
 * Follows an SSE feed until `signal` aborts. A dropped or refused connection is retried with `backoff`,
 * resuming after the last event id seen (`?after=`: nothing lost, nothing twice). It stops for good — calls
 * `onStop(ApiError)` — when the key is refused: a 401, or the stream's `error` event `{code: "unauthorized"}`
 * (the key was revoked). `onReady(fresh)` on each `ready` (fresh: no event seen yet, the feed starts at "now");
 * `onRetry(ms, reason)` before each wait.
 */
export async function follow(conn, path, { onEvent, onReady, onRetry, onStop }, signal) {
  let after;
  let attempt = 0;
  while (!signal.aborted) {
    const attemptAbort = new AbortController();
    const cut = () => attemptAbort.abort();
    signal.addEventListener('abort', cut, { once: true });
    let refused = null;
    let reason = 'closed';
    try {
      const sep = path.includes('?') ? '&' : '?';
      const url = after === undefined ? path : `${path}${sep}after=${encodeURIComponent(after)}`;
      await conn.stream(
        url,
        (e) => {
          if (e.event === 'ready') {
            attempt = 0;
            onReady?.(after === undefined);
            return;
          }
          if (e.event === 'error') {
            const err = errorEvent(e);
            if (err.status === 401) {
              refused = err;
              attemptAbort.abort();
            } else reason = err.code;
            return;
          }
          if (e.id) after = e.id;
          try {
            onEvent(e);
          } catch (err) {
            console.error('feed event', e.event, err);
          }
        },
        attemptAbort.signal,
      );
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) refused = e;
      else if (!refused) reason = e instanceof ApiError ? `${e.status} ${e.code}` : 'network';
    } finally {
      signal.removeEventListener('abort', cut);
    }
    if (refused) return onStop(refused);
    if (signal.aborted) return;
    const ms = backoff(attempt++);
    onRetry?.(ms, reason);
    await sleep(ms, signal);
  }
}
