// A drain past its grace returns: the killed intervals stop their artifact uploads and their wait for the
// completion batch at once, and what still does not wind down within the request timeout is abandoned (its
// lease expires and its run requeues). Before, the upload loop and the completion wait ignored the abort and
// the drain awaited everything unbounded: a control plane that never answered kept a SIGTERM'd runner from
// exiting. And every call to the control plane is bounded by the request timeout. Real process-driver
// sandboxes; the control plane is a fake that never answers one kind of call.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Driver, SandboxHandle } from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import { withRequestTimeout } from '../src/timed-api.js';
import { leaseOf, signal } from './fake-control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-drain-bounds-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const never = <T>() => new Promise<T>(() => {});

/** A control plane granting one lease running `command`, answering everything — but what `override` replaces. */
function oneLease(command: string[], override: Partial<RunnerApi>): RunnerApi {
  const lease = leaseOf(0, command);
  let granted = false;
  return {
    async leases(_free, _waitMs, abort) {
      if (!granted) {
        granted = true;
        return [lease];
      }
      await new Promise<void>((r) => abort?.addEventListener('abort', () => r(), { once: true }));
      return [];
    },
    heartbeat: async () => ({ lost: [], draining: false }),
    events: async () => undefined,
    artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
    complete: async () => undefined,
    completeMany: async (items) => ({ results: items.map(() => ({ outcome: 'settled' as const })) }),
    ...override,
  };
}

function daemonOf(name: string, api: RunnerApi, requestTimeoutMs: number, driver?: Driver): RunnerDaemon {
  const daemon = new RunnerDaemon({
    api,
    driver:
      driver ?? new ProcessDriver({ stateDir: join(dir, name), imagesDir: join(dir, 'images'), slots: 2 }),
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots: 1,
    requestTimeoutMs,
  });
  daemon.start();
  return daemon;
}

describe('a drain past its grace', () => {
  it('returns while an artifact upload is never answered: the killed interval stops uploading', async () => {
    const uploading = signal();
    const api = oneLease(['sh', '-c', 'echo x > out/a.txt; echo y > out/b.txt'], {
      artifact: () => {
        uploading.fire();
        return never();
      },
    });
    // The request timeout is far past the test's own: only the interval's abort can end the upload.
    const daemon = daemonOf('upload', api, 600_000);
    await uploading.promise;
    await daemon.drain(100);
    expect(daemon.ended).toEqual({ completed: 0, aborted: 1, failed: 0 });
    expect(daemon.held).toEqual([]);
  }, 60_000);

  it('returns while a completion batch is never answered: the killed interval stops waiting for it', async () => {
    const sent = signal();
    const api = oneLease(['true'], {
      completeMany: () => {
        sent.fire();
        return never();
      },
    });
    const daemon = daemonOf('complete', api, 600_000);
    await sent.promise;
    await daemon.drain(100);
    expect(daemon.ended).toEqual({ completed: 0, aborted: 1, failed: 0 });
  }, 60_000);

  it('abandons what does not wind down within the request timeout (a dispose that never returns)', async () => {
    const real = new ProcessDriver({
      stateDir: join(dir, 'dispose'),
      imagesDir: join(dir, 'images'),
      slots: 2,
    });
    const disposing = signal<SandboxHandle>();
    const driver = new Proxy(real, {
      get(target, prop) {
        if (prop === 'dispose')
          return (handle: SandboxHandle) => {
            disposing.fire(handle);
            return never();
          };
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const daemon = daemonOf('dispose', oneLease(['true'], {}), 500, driver);
    const handle = await disposing.promise;
    try {
      await daemon.drain(100);
      // The interval is still stuck in its dispose: abandoned, neither counted nor waited for.
      expect(daemon.ended).toEqual({ completed: 0, aborted: 0, failed: 0 });
    } finally {
      await real.dispose(handle);
    }
  }, 60_000);
});

describe('a call to the control plane', () => {
  it('unanswered past the request timeout fails as one with no answer, its signal aborted', async () => {
    let given: AbortSignal | undefined;
    const api = withRequestTimeout(
      oneLease(['true'], {
        heartbeat: (_leases, s) => {
          given = s;
          return never();
        },
      }),
      50,
    );
    await expect(api.heartbeat([])).rejects.toMatchObject({ code: 'network' });
    expect(given?.aborted).toBe(true);
  });

  it('ends as soon as its caller aborts it', async () => {
    const abort = new AbortController();
    const api = withRequestTimeout(oneLease(['true'], { events: () => never() }), 600_000);
    const call = api.events('run-1', 1, [], abort.signal);
    abort.abort(new Error('the interval was killed'));
    await expect(call).rejects.toThrow('the interval was killed');
  });
});
