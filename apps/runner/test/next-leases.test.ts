// The next leases ride on the completion batch: a runner asks with the batch (`next: {free}`) for the slots
// free of compute that no long-poll asks for, and starts what comes back. With `leaseOnFree: 'batch'` (the
// default) a slot freed by a finished compute waits for that batch instead of a lease request of its own; with
// `'poll'` the long-poll asks at once and the batches carry what it does not. Never more leases held — nor
// sandboxes provisioned — than the lease bound (2 × slots), never more executing than slots: real
// process-driver sandboxes with the driver's own capacity set to the bound (a provision past it fails the
// interval), and a fake control plane that grants what it is asked for and counts.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { leaseBound, RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import { fakeControlPlane as fakeOf, leaseOf } from './fake-control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-next-leases-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SLOTS = 2;
const RUNS = 8;

/** A control plane with `runs` queued runs: grants what it is asked for, settles every completion, counts. */
const fakeControlPlane = (runs = RUNS) => fakeOf(runs);

const daemonOf = (
  cp: ReturnType<typeof fakeControlPlane>,
  fail: (err: Error) => void,
  leaseOnFree: 'poll' | 'batch' = 'batch',
) =>
  new RunnerDaemon({
    api: cp.api,
    driver: new ProcessDriver({
      stateDir: join(dir, `state-${leaseOnFree}`),
      imagesDir: join(dir, 'images'),
      slots: leaseBound(SLOTS),
    }),
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots: SLOTS,
    leaseOnFree,
    heartbeatMs: 60_000,
    log: (level, msg, fields) => {
      if (level === 'error') fail(new Error(`${msg}: ${JSON.stringify(fields)}`));
    },
  });

describe('the next leases with a completion batch', () => {
  it.each(['batch', 'poll'] as const)(
    "keep a busy runner leased, never past its slots nor its lease bound (leaseOnFree '%s')",
    async (leaseOnFree) => {
      const cp = fakeControlPlane();
      // A failed interval (the driver refusing a sandbox past its capacity) ends the wait at once.
      let failed: (err: Error) => void = () => {};
      const failure = new Promise<never>((_, reject) => {
        failed = reject;
      });
      const daemon = daemonOf(cp, (err) => failed(err), leaseOnFree);
      daemon.start();
      await Promise.race([cp.done, failure]).finally(() => daemon.drain(30_000));
      expect(daemon.ended).toEqual({ completed: RUNS, aborted: 0, failed: 0 });
      expect(cp.seen.settled).toBe(RUNS);
      expect(cp.seen.maxHeld).toBeLessThanOrEqual(leaseBound(SLOTS));
      expect(daemon.peak.executing).toBeLessThanOrEqual(SLOTS);
      if (leaseOnFree === 'batch') {
        // The first request took the first two runs; the other six came with completions. (At most one more
        // request: the long-poll once the queue ran dry.) A lease request per freed slot would be RUNS or more.
        expect(cp.seen.leaseRequests.length).toBeLessThanOrEqual(2);
      } else {
        // One long-poll at a time: a freed slot asks at once, what frees meanwhile waits for its answer.
        expect(cp.seen.leaseRequests.length).toBeLessThanOrEqual(RUNS);
      }
      // (A batch asks for none while a long-poll waits: the queue was empty when it last looked.)
      expect(cp.seen.asked.every((n) => n >= 0 && n <= SLOTS)).toBe(true);
    },
    120_000,
  );

  it('a drain waits for the leases a batch in flight brings: they run and settle', async () => {
    const [first, second] = [leaseOf(0), leaseOf(1)];
    const completed: string[] = [];
    let sent: () => void = () => {};
    const inFlight = new Promise<void>((r) => {
      sent = r;
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let polls = 0;
    const api: RunnerApi = {
      async leases(_free, _waitMs, signal) {
        polls += 1;
        if (polls === 1) return [first];
        await new Promise<void>((r) => signal?.addEventListener('abort', () => r(), { once: true }));
        return [];
      },
      heartbeat: async () => ({ lost: [], draining: false }),
      events: async () => undefined,
      artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
      complete: async () => undefined,
      async completeMany(items, next) {
        completed.push(...items.map((i) => i.runId));
        if (items[0]?.runId === first.runId) {
          sent();
          await gate; // the drain begins while this batch is in flight
          return { results: [{ outcome: 'settled' }], ...(next ? { leases: [second] } : {}) };
        }
        return { results: items.map(() => ({ outcome: 'settled' as const })) };
      },
    };
    const daemon = new RunnerDaemon({
      api,
      driver: new ProcessDriver({
        stateDir: join(dir, 'state-drain'),
        imagesDir: join(dir, 'images'),
        slots: 1,
      }),
      key: generateSigningKey(randomBytes(32)),
      meter: () => new EnergyMeter(join(dir, 'no-powercap')),
      slots: 1,
      // The freed slot waits for the batch (no long-poll of its own): the batch in flight asks for it.
      leaseOnFree: 'batch',
      heartbeatMs: 60_000,
    });
    daemon.start();
    await inFlight;
    const drained = daemon.drain(30_000);
    // The batch answers only after the drain has stopped the lease loop and looked at what is held (its
    // continuations are microtasks: all done before the next turn of the event loop).
    await new Promise((r) => setImmediate(r));
    release();
    await drained;
    expect(completed).toEqual([first.runId, second.runId]);
    expect(daemon.ended).toEqual({ completed: 2, aborted: 0, failed: 0 });
    expect(daemon.held).toEqual([]);
  }, 120_000);

  it('a batch asks for none while a long-poll waits (the queue was empty when it last looked)', async () => {
    const cp = fakeControlPlane(1);
    let failed: (err: Error) => void = () => {};
    const failure = new Promise<never>((_, reject) => {
      failed = reject;
    });
    const daemon = daemonOf(cp, (err) => failed(err));
    daemon.start();
    await Promise.race([cp.done, failure]).finally(() => daemon.drain(30_000));
    expect(daemon.ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
    // The first request got the one run; the second (its other slot) waited while the run completed.
    expect(cp.seen.leaseRequests.length).toBe(2);
    expect(cp.seen.asked).toEqual([0]);
  }, 120_000);

  it('a failed lease request: the pause before its retry asks for nothing, and a drain ends it at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let requests = 0;
      let failed: () => void = () => {};
      const firstFailure = new Promise<void>((r) => {
        failed = r;
      });
      const api: RunnerApi = {
        async leases() {
          requests += 1;
          failed();
          throw new Error('connection reset');
        },
        heartbeat: async () => ({ lost: [], draining: false }),
        events: async () => undefined,
        artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
        complete: async () => undefined,
        completeMany: async () => ({ results: [] }),
      };
      const daemon = new RunnerDaemon({
        api,
        driver: new ProcessDriver({
          stateDir: join(dir, 'state-retry'),
          imagesDir: join(dir, 'images'),
          slots: SLOTS,
          readyPool: 0,
        }),
        key: generateSigningKey(randomBytes(32)),
        meter: () => new EnergyMeter(join(dir, 'no-powercap')),
        slots: SLOTS,
        heartbeatMs: 60_000,
      });
      daemon.start();
      await firstFailure;
      await vi.advanceTimersByTimeAsync(10); // inside the 1 s pause
      expect(daemon.asking).toBe(0); // the slots are free for a completion batch to ask for
      let drained = false;
      const drain = daemon.drain(0).then(() => {
        drained = true;
      });
      await vi.advanceTimersByTimeAsync(10); // still well inside the pause
      expect(drained).toBe(true);
      await drain;
      expect(requests).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
