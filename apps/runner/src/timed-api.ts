// Every call the daemon makes to the control plane, bounded in time: a call with no answer within the request
// timeout (a long-poll: within its wait and that) fails as a call that got no answer does — ClientError
// `network` — and the signal it was given ends it, so the HTTP request is cut too (`HttpRunnerApi`). A caller's
// own signal (the long-poll's stop, an interval's abort) ends it earlier, with that signal's reason. A port
// that does not honour the signal is not waited for past it either.
import { ClientError } from '@everdict/client';
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
    const signal = outer ? AbortSignal.any([timeout, outer]) : timeout;
    const reason = () =>
      timeout.aborted
        ? new ClientError('network', 0, `no answer from the control plane within ${ms} ms`)
        : (outer?.reason ?? new Error('aborted'));
    if (signal.aborted) return Promise.reject(reason());
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(reason());
      signal.addEventListener('abort', stop, { once: true });
      const settled = () => signal.removeEventListener('abort', stop);
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
      bounded(timeoutMs, signal, (s) => api.artifact(runId, epoch, path, body, s)),
    complete: (runId, body, signal) => bounded(timeoutMs, signal, (s) => api.complete(runId, body, s)),
    completeMany: (items, next, signal) =>
      bounded(timeoutMs, signal, (s) => api.completeMany(items, next, s)),
  };
}
