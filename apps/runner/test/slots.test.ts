// A runner's slot is its sandbox's compute, not its lease. An interval frees its slot once its command has
// exited (usage and energy read); its artifacts, dispose and completion run behind it, its lease still held
// and heartbeated until the completion settles it, while the slot executes the next lease. The runner holds
// at most `leaseBound(slots)` leases and never executes more than `slots` at once — even when a control
// plane grants more than it asked for. Real process-driver sandboxes, counted by a wrapper around the driver
// (the commands running at once, the sandboxes alive at once), and fake control planes that count.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Driver } from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { leaseBound, RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import { fakeControlPlane, leaseOf, signal } from './fake-control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-slots-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The real process driver, counted: commands running at once (from `stream` until its exit) and sandboxes
 * alive at once (provision → dispose); `onStream`/`onDispose` see each run's command start and sandbox go.
 */
function countingDriver(name: string, capacity: number) {
  const real = new ProcessDriver({
    stateDir: join(dir, `state-${name}`),
    imagesDir: join(dir, 'images'),
    slots: capacity,
  });
  const seen = { running: 0, maxRunning: 0, alive: 0, maxAlive: 0 };
  const hooks = { onStream: (_runId: string) => {}, onDispose: (_runId: string) => {} };
  const disposed = new Set<string>();
  const driver = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'provision')
        return async (...args: Parameters<Driver['provision']>) => {
          const handle = await target.provision(...args);
          seen.alive += 1;
          seen.maxAlive = Math.max(seen.maxAlive, seen.alive);
          return handle;
        };
      if (prop === 'dispose')
        return async (...args: Parameters<Driver['dispose']>) => {
          await target.dispose(...args);
          if (!disposed.has(args[0].id)) {
            disposed.add(args[0].id);
            seen.alive -= 1;
            hooks.onDispose(String(args[0].labels.runId));
          }
        };
      if (prop === 'stream')
        return async (...args: Parameters<Driver['stream']>) => {
          const stream = await target.stream(...args);
          seen.running += 1;
          seen.maxRunning = Math.max(seen.maxRunning, seen.running);
          hooks.onStream(String(args[0].labels.runId));
          void stream.exit.finally(() => {
            seen.running -= 1;
          });
          return stream;
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Driver;
  return { driver, seen, hooks };
}

const daemonOf = (
  api: RunnerApi,
  driver: Driver,
  slots: number,
  fail: (err: Error) => void,
  { heartbeatMs = 60_000, leaseOnFree = 'batch' as 'batch' | 'poll' } = {},
) =>
  new RunnerDaemon({
    api,
    driver,
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots,
    heartbeatMs,
    leaseOnFree,
    log: (level, msg, fields) => {
      if (level === 'error') fail(new Error(`${msg}: ${JSON.stringify(fields)}`));
    },
  });

/** A few turns of the event loop: whatever a wake started has sent its request by then. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('a slot is its sandbox, not its lease', () => {
  it('a completion held by the control plane does not hold the slot: the next lease runs meanwhile', async () => {
    const SLOTS = 1;
    const cp = fakeControlPlane(3, leaseBound(SLOTS));
    const counted = countingDriver('held', leaseBound(SLOTS));
    const [first, second] = [cp.queue[0]!.runId, cp.queue[1]!.runId];
    const release = signal();
    cp.setGate(() => release.promise);
    const secondRan = signal();
    const secondDisposed = signal();
    counted.hooks.onStream = (runId) => {
      if (runId === second) secondRan.fire();
    };
    counted.hooks.onDispose = (runId) => {
      if (runId === second) secondDisposed.fire();
    };
    const failure = signal<Error>();
    // `'poll'`: the freed slot asks with a lease request of its own (by default it waits for the next
    // completion batch — the held one here).
    const daemon = daemonOf(cp.api, counted.driver, SLOTS, failure.fire, {
      heartbeatMs: 20,
      leaseOnFree: 'poll',
    });
    daemon.start();
    // The first run's completion is held; its slot still runs the second lease (a slot that were a lease
    // would wait for the completion's answer: this never resolves then).
    await Promise.race([secondRan.promise, failure.promise.then((e) => Promise.reject(e))]);
    // The first's completion may go out after the second started (its dispose's cgroup rmdirs run on the thread
    // pool): wait for it, held — it stays in flight until `release`, so the second ran before it was answered.
    await vi.waitFor(() => expect(cp.seen.completionsInFlight).toBe(1), { timeout: 30_000, interval: 5 });
    expect(cp.held.has(first)).toBe(true);
    // The second run's compute done too (its sandbox gone, its completion queued behind the held batch):
    // two leases held, the bound for one slot — the third run is not asked for.
    await Promise.race([secondDisposed.promise, failure.promise.then((e) => Promise.reject(e))]);
    await turns();
    expect(cp.seen.leaseRequests).toEqual([1, 1]);
    expect([...cp.held].sort()).toEqual([first, second].sort());
    expect(daemon.executing).toBe(0);
    // Both settling leases are still heartbeated (they are held until the completion settles them).
    const beats = cp.seen.heartbeats.length;
    await new Promise<void>((r) => {
      const check = () => {
        const last = cp.seen.heartbeats.at(-1);
        if (cp.seen.heartbeats.length > beats && last?.includes(first) && last.includes(second)) r();
        else setTimeout(check, 10);
      };
      check();
    });
    // A drain waits for the settling intervals too: none ended before their completions are answered.
    let drained = false;
    const draining = daemon.drain(30_000).then(() => {
      drained = true;
    });
    await turns();
    expect(drained).toBe(false);
    expect(daemon.ended.completed).toBe(0);
    release.fire();
    await draining;
    // The held batch asked for the next lease when the first's completion went out before the second lease
    // started (its slot then looked free): granted with the answer, it is run by the drain (daemon.ts `drain`:
    // what a batch in flight brings settles instead of expiring into a requeue) — the third run too, then.
    const ran = cp.seen.asked.some((n) => n > 0) ? 3 : 2;
    expect(daemon.ended).toEqual({ completed: ran, aborted: 0, failed: 0 });
    expect(cp.seen.settled).toBe(ran);
    expect(daemon.held).toEqual([]);
    expect(counted.seen.maxRunning).toBe(1);
    expect(cp.seen.maxHeld).toBe(2);
  }, 120_000);

  it("an interval's artifact upload does not hold the slot: with no completion on its way, it long-polls", async () => {
    // One slot, the default `'batch'`: the first run writes out/a and its upload is held; no completion is
    // queued meanwhile (none would carry the freed slot's lease), so the slot asks with a lease request.
    const SLOTS = 1;
    const cp = fakeControlPlane(2, leaseBound(SLOTS));
    cp.queue[0] = leaseOf(0, ['sh', '-c', 'echo x > out/a']);
    const [first, second] = [cp.queue[0].runId, cp.queue[1]!.runId];
    const release = signal();
    const uploading = signal();
    cp.api.artifact = async (runId, _e, path) => {
      if (runId === first) {
        uploading.fire();
        await release.promise;
      }
      return { path, address: `blake3:${'0'.repeat(64)}`, size: 0 };
    };
    const counted = countingDriver('upload', leaseBound(SLOTS));
    const secondRan = signal();
    counted.hooks.onStream = (runId) => {
      if (runId === second) secondRan.fire();
    };
    const failure = signal<Error>();
    const daemon = daemonOf(cp.api, counted.driver, SLOTS, failure.fire);
    daemon.start();
    const failed = failure.promise.then((e) => Promise.reject(e));
    await Promise.race([uploading.promise, failed]);
    // (A slot that waited for a completion batch — or a slot that were a lease — never runs the second.)
    await Promise.race([secondRan.promise, failed]);
    expect(cp.seen.settled).toBe(0);
    expect([...cp.held].sort()).toEqual([first, second].sort());
    release.fire();
    await Promise.race([cp.done, failed]).finally(() => daemon.drain(30_000));
    expect(daemon.ended).toEqual({ completed: 2, aborted: 0, failed: 0 });
    expect(counted.seen.maxRunning).toBe(1);
  }, 120_000);

  it('never executes more than its slots, even when granted more than it asked for', async () => {
    const SLOTS = 2;
    const RUNS = 10;
    // The control plane grants two more than asked (within the bound): the extra leases wait for a slot.
    const cp = fakeControlPlane(RUNS, leaseBound(SLOTS), { overGrant: 2 });
    const counted = countingDriver('over', leaseBound(SLOTS));
    const failure = signal<Error>();
    const daemon = daemonOf(cp.api, counted.driver, SLOTS, failure.fire);
    daemon.start();
    await Promise.race([cp.done, failure.promise.then((e) => Promise.reject(e))]).finally(() =>
      daemon.drain(30_000),
    );
    expect(daemon.ended).toEqual({ completed: RUNS, aborted: 0, failed: 0 });
    expect(cp.seen.settled).toBe(RUNS);
    // More leases held than slots (the extra ones and the settling ones), never more commands running.
    expect(cp.seen.maxHeld).toBeGreaterThan(SLOTS);
    expect(counted.seen.maxRunning).toBeLessThanOrEqual(SLOTS);
    expect(daemon.peak.executing).toBeLessThanOrEqual(SLOTS);
    expect(counted.seen.maxAlive).toBeLessThanOrEqual(leaseBound(SLOTS));
  }, 120_000);
});
