// Every call the daemon makes to the control plane, bounded in time: a call with no answer within the request
// timeout (a long-poll: within its wait and that) fails as a call that got no answer does — ClientError
// `network` — and the signal it was given ends it, so the HTTP request is cut too (`HttpRunnerApi`). A caller's
// own signal (the long-poll's stop, an interval's abort) ends it earlier, with that signal's reason. A port
// that does not honour the signal is not waited for past it either.
// An artifact's upload is bounded by progress instead (`withIdleTimeout`): its body may take any time to go up,
// but no byte taken from it for the request timeout fails it the same way — a fixed bound cut every large
// artifact on a slow link, whatever its progress.
// The caller's signal lives as long as the daemon (or its long-poll): it is joined to each call's own with
// `anySignal`, whose listeners every call removes when it ends. `AbortSignal.any` keeps a reference to every
// signal it ever joined to a source until that source aborts (Node 20: nodejs/node#55351) — one per call to
// the control plane, for the daemon's whole life (README, "Long-lived signals").
import { Readable } from 'node:stream';
import { ClientError } from '@everdict/client';
import { anySignal } from 'any-signal';
import type { RunnerApi } from './port.js';

/** How long a call to the control plane may go unanswered, by default (the daemon's `requestTimeoutMs`). */
export const REQUEST_TIMEOUT_MS = 30_000;

export function withRequestTimeout(api: RunnerApi, timeoutMs = REQUEST_TIMEOUT_MS): RunnerApi {
  const bounded = <T>(
    ms: number,
    outer: AbortSignal | undefined,
    call: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> => {
    const timeout = AbortSignal.timeout(ms);
    const signal = anySignal([timeout, outer]);
    const reason = () =>
      timeout.aborted
        ? new ClientError('network', 0, `no answer from the control plane within ${ms} ms`)
        : (outer?.reason ?? new Error('aborted'));
    if (signal.aborted) {
      signal.clear();
      return Promise.reject(reason());
    }
    return new Promise<T>((resolve, reject) => {
      const settled = () => {
        signal.removeEventListener('abort', stop);
        signal.clear();
      };
      const stop = () => {
        settled();
        reject(reason());
      };
      signal.addEventListener('abort', stop, { once: true });
      Promise.resolve()
        .then(() => call(signal))
        .then(
          (v) => {
            settled();
            resolve(v);
          },
          (err: unknown) => {
            settled();
            reject(err);
          },
        );
    });
  };
  return {
    leases: (free, waitMs, signal) => bounded(waitMs + timeoutMs, signal, (s) => api.leases(free, waitMs, s)),
    heartbeat: (leases, signal) => bounded(timeoutMs, signal, (s) => api.heartbeat(leases, s)),
    events: (runId, epoch, events, signal) =>
      bounded(timeoutMs, signal, (s) => api.events(runId, epoch, events, s)),
    artifact: (runId, epoch, path, body, signal) =>
      withIdleTimeout(timeoutMs, body, signal, (b, s) => api.artifact(runId, epoch, path, b, s)),
    // A batch's body is a few hundred KiB held whole: bounded as a JSON call is.
    ...(api.artifacts
      ? {
          artifacts: (
            runId: string,
            epoch: number,
            files: Parameters<NonNullable<RunnerApi['artifacts']>>[2],
            signal?: AbortSignal,
          ) => bounded(timeoutMs, signal, (s) => api.artifacts!(runId, epoch, files, s)),
        }
      : {}),
    complete: (runId, body, signal) => bounded(timeoutMs, signal, (s) => api.complete(runId, body, s)),
    completeMany: (items, next, signal) =>
      bounded(timeoutMs, signal, (s) => api.completeMany(items, next, s)),
  };
}

/** The slices a body is handed on in: each one taken is progress, so one large chunk is not one step. */
const UPLOAD_SLICE_BYTES = 64 * 1024;

/**
 * `call` with `body` as a stream that reports each slice (≤ `UPLOAD_SLICE_BYTES`) the request takes from it:
 * the call fails as `network` once no slice was taken for `idleMs` (before the body, between its slices, and
 * from its last one to the answer), and its signal then cuts the request. `outer` ends it at once, as above.
 */
function withIdleTimeout<T>(
  idleMs: number,
  body: Readable,
  outer: AbortSignal | undefined,
  call: (body: Readable, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const idle = new AbortController();
  const signal = anySignal([idle.signal, outer]);
  const reason = () =>
    idle.signal.aborted
      ? new ClientError('network', 0, `no bytes moved to the control plane for ${idleMs} ms`)
      : (outer?.reason ?? new Error('aborted'));
  if (signal.aborted) {
    signal.clear();
    body.destroy();
    return Promise.reject(reason());
  }
  let done = false;
  let slicesTaken = 0;
  // The timer firing is not yet idleness: a process whose event loop was held (a busy runner, a long GC) runs
  // its due timers before the I/O that moved meanwhile. The check waits for that I/O (setImmediate runs after
  // the poll phase) and fails the call only if no slice was taken since the timer fired.
  const timer = setTimeout(() => {
    const seen = slicesTaken;
    setImmediate(() => {
      if (!done && slicesTaken === seen) idle.abort();
    });
  }, idleMs);
  const moved = () => {
    slicesTaken += 1;
    if (!done) timer.refresh();
  };
  async function* slices(): AsyncGenerator<Buffer> {
    for await (const chunk of body) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      for (let at = 0; at < bytes.length; at += UPLOAD_SLICE_BYTES) {
        moved();
        yield bytes.subarray(at, at + UPLOAD_SLICE_BYTES);
      }
    }
    moved(); // the body is all taken: the answer has the whole bound
  }
  // One slice read ahead at most, so a slice taken is close to a slice sent.
  const progress = Readable.from(slices(), { objectMode: false, highWaterMark: UPLOAD_SLICE_BYTES });
  return new Promise<T>((resolve, reject) => {
    const settled = () => {
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      signal.clear();
    };
    const stop = () => {
      settled();
      progress.destroy();
      body.destroy();
      reject(reason());
    };
    signal.addEventListener('abort', stop, { once: true });
    Promise.resolve()
      .then(() => call(progress, signal))
      .then(
        (v) => {
          settled();
          resolve(v);
        },
        (err: unknown) => {
          settled();
          reject(err);
        },
      );
  });
}
