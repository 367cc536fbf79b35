// Signals that live as long as the process — the lifecycle's shutdown signal, the trajectory jobs' stop — are
// joined to a request's or a wait's for that request or wait only. A runner's lease poll, an agent host's,
// a run's event stream: once it has ended, the shutdown reaches none of the signals it was given. With
// `AbortSignal.any` every one stays linked to the shutdown signal until the process stops (Node 20:
// nodejs/node#55351) — one per lease poll, for the process's life. The trajectory jobs' seal poll left a
// listener on its stop signal at every wait (node warned of a possible leak after the eleventh).
import { describe, expect, it } from 'vitest';
import type { Deps } from '../services/context.js';
import { TrajectoryJobs } from '../trajectory/jobs.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { Lifecycle } from './lifecycle.js';

const until = async (what: string, done: () => boolean): Promise<void> => {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
};

describe('the lifecycle’s long polls', () => {
  it('an ended poll is unlinked from the shutdown signal; one in flight still ends at the drain', async () => {
    const lifecycle = new Lifecycle();
    const ended: AbortSignal[] = [];
    for (let i = 0; i < 100; i++) {
      const request = new AbortController();
      await lifecycle.poll(request.signal, async (signal) => {
        ended.push(signal);
        return [];
      });
    }
    let held: AbortSignal | undefined;
    const inFlight = lifecycle.poll(new AbortController().signal, (signal) => {
      held = signal;
      return new Promise<string>((resolve) =>
        signal.addEventListener('abort', () => resolve('cut'), { once: true }),
      );
    });
    await lifecycle.drain(1000);
    expect(await inFlight).toBe('cut');
    expect(held?.aborted).toBe(true);
    expect(ended.filter((s) => s.aborted)).toHaveLength(0);
  });

  it('a client gone mid-poll ends it', async () => {
    const lifecycle = new Lifecycle();
    const request = new AbortController();
    const poll = lifecycle.poll(
      request.signal,
      (signal) =>
        new Promise<boolean>((resolve) =>
          signal.addEventListener('abort', () => resolve(true), { once: true }),
        ),
    );
    request.abort();
    expect(await poll).toBe(true);
  });
});

describe('the trajectory jobs’ seal poll', () => {
  it('keeps no listener per wait on its stop signal', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const quiet = { log: () => {} } as unknown as Deps;
    const jobs = new TrajectoryJobs(quiet, {} as RunTrajectories, { sealPollMs: 1 });
    let polls = 0;
    jobs.sealDue = async () => {
      polls += 1;
      return { sealed: 0, empty: 0, failed: 0 };
    };
    try {
      jobs.start();
      await until('40 seal polls', () => polls >= 40);
      await jobs.stop();
      // A warning is emitted on the next tick after the listener that crossed the limit was added.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
