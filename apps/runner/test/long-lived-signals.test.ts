// A call's signal is joined to a signal that lives as long as the daemon (its stop, the heartbeat pacer's) for
// that call only: once the call has ended, aborting the long-lived one reaches none of the signals the ended
// calls were given. With `AbortSignal.any` each would stay linked (Node 20 keeps every signal it ever joined
// to a source until that source aborts: nodejs/node#55351), one per call for the daemon's life — a heartbeat
// every 2 s, a lease poll every wait, an event batch per trajectory flush.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HeartbeatPacer } from '../src/held-lease.js';
import type { RunnerApi } from '../src/port.js';
import { withRequestTimeout } from '../src/timed-api.js';
import { waitFor } from './helpers.js';

/** A control plane that answers every call at once, keeping the signal each call was given. */
function answeringApi(given: AbortSignal[]): RunnerApi {
  const take =
    <T>(value: T) =>
    (signal?: AbortSignal) => {
      if (signal) given.push(signal);
      return Promise.resolve(value);
    };
  return {
    leases: (_free, _wait, signal) => take([])(signal),
    heartbeat: (_leases, signal) => take({ lost: [], draining: false })(signal),
    events: (_run, _epoch, _events, signal) => take(undefined)(signal),
    artifact: async (_run, _epoch, path, body, signal) => {
      for await (const _ of body) {
        // drained
      }
      return take({ path, address: `blake3:${'ab'.repeat(32)}`, size: 0 })(signal);
    },
    complete: (_run, _body, signal) => take(undefined)(signal),
    completeMany: (items, _next, signal) =>
      take({ results: items.map(() => ({ outcome: 'settled' as const })) })(signal),
  };
}

describe('calls under the daemon’s long-lived signal', () => {
  it('each ended call is unlinked from it: aborting it later reaches none of them', async () => {
    const given: AbortSignal[] = [];
    const api = withRequestTimeout(answeringApi(given), 30_000);
    const daemon = new AbortController();
    for (let i = 0; i < 50; i++) {
      await api.heartbeat([], daemon.signal);
      await api.leases(1, 0, daemon.signal);
      await api.events('r1', 1, [], daemon.signal);
      await api.artifact('r1', 1, 'out.txt', Readable.from([Buffer.from('x')]), daemon.signal);
    }
    expect(given).toHaveLength(200);
    daemon.abort(new Error('daemon stopped'));
    expect(given.filter((s) => s.aborted)).toHaveLength(0);
  });

  it('a call in flight still ends with the daemon’s reason when it aborts', async () => {
    const daemon = new AbortController();
    let given: AbortSignal | undefined;
    const hanging: RunnerApi = {
      ...answeringApi([]),
      heartbeat: (_leases, signal) => {
        given = signal;
        return new Promise(() => {});
      },
    };
    const call = withRequestTimeout(hanging, 30_000).heartbeat([], daemon.signal);
    await waitFor('the heartbeat sent', async () => given);
    daemon.abort(new Error('daemon stopped'));
    await expect(call).rejects.toThrow('daemon stopped');
    expect(given?.aborted).toBe(true);
  });

  it('the heartbeat pacer’s stop reaches only the heartbeats still in flight', async () => {
    const ended: AbortSignal[] = [];
    let open: AbortSignal | undefined;
    const pacer = new HeartbeatPacer({
      everyMs: 2,
      requestTimeoutMs: 30_000,
      shortestLeaseMs: () => 60_000,
      beat: async (signal) => {
        if (ended.length >= 40) {
          open = signal; // the last one hangs until the stop cuts it
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return;
        }
        ended.push(signal);
      },
      log: () => {},
    });
    await waitFor('40 heartbeats answered and one in flight', async () => open);
    pacer.stop();
    expect(open?.aborted).toBe(true);
    expect(ended.filter((s) => s.aborted)).toHaveLength(0);
  });
});
