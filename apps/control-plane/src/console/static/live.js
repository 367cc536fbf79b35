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

  /** Reads an SSE endpoint until it ends or `signal` aborts; calls onEvent({id, event, data}). */
  async function stream(path, onEvent, signal) {
    const res = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), signal });
    if (!res.ok) {
      let problem;
      try {
        problem = await res.json();
      } catch {
        problem = undefined;
      }
      throw new ApiError(res.status, problem);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let ev = { event: 'message', data: [], id: undefined };
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

  return { call, stream };
}
