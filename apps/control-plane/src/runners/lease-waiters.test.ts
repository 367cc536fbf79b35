// LeaseWaiters: a runner's long-poll wakes on a dispatch NOTIFY that may announce runner work, and stays asleep
// on an inline-only create's (analysis runs: no runner can claim them). Fake timers: "still asleep" is exact.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RUNNERS_CHANNEL } from '../auth/runner-credentials.js';
import { leasePolicy } from '../leases/policy.js';
import { type Deps, DISPATCH_CHANNEL, dispatchPayload } from '../services/context.js';
import { LeaseWaiters } from './service.js';

describe('LeaseWaiters', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sleeps through inline-only creates and wakes on anything else', async () => {
    let notify: (payload: string) => void = () => undefined;
    const channels: string[] = [];
    const deps = {
      ldb: {
        listen: async (channel: string, fn: (payload: string) => void) => {
          channels.push(channel);
          if (channel === DISPATCH_CHANNEL) notify = fn;
          return async () => undefined;
        },
      },
      log: () => undefined,
    } as unknown as Deps;
    const waiters = new LeaseWaiters(deps, leasePolicy());
    await waiters.start();
    expect(channels).toEqual([DISPATCH_CHANNEL, RUNNERS_CHANNEL]);
    let woken = 0;
    void waiters.wait(60_000).then(() => woken++);
    notify(dispatchPayload('dispatch:a', ['analysis']));
    notify(dispatchPayload('', ['analysis', 'analysis']));
    await vi.advanceTimersByTimeAsync(1);
    expect(woken).toBe(0);
    notify(dispatchPayload('dispatch:a', ['analysis', 'command'])); // a runner's kind among them
    await vi.advanceTimersByTimeAsync(1);
    expect(woken).toBe(1);
    void waiters.wait(60_000).then(() => woken++);
    notify(''); // a requeue, a cancel, an older replica
    await vi.advanceTimersByTimeAsync(1);
    expect(woken).toBe(2);
    await waiters.stop();
  });
});
