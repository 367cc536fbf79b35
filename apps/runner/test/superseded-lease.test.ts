// A run leased again to the same runner at a higher epoch (its heartbeats failed past the lease's expiry, the
// control plane requeued the run and granted it back here) while the earlier interval still runs: the earlier
// one lost its lease — it is killed and sends nothing — and the daemon holds and heartbeats the new one. Real
// process-driver sandboxes; the control plane is a recording fake.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import { Lease } from '../src/protocol.js';
import { leaseOf, signal } from './fake-control-plane.js';
import { waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-superseded-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a lease for a run already held', () => {
  it('at a higher epoch: the earlier interval is killed, the new one held and heartbeated', async () => {
    const first = leaseOf(0, ['sleep', '60']);
    const second = Lease.parse({ ...first, epoch: 2, attempt: 2 });
    const regrant = signal();
    const heartbeats: { runId: string; epoch: number }[][] = [];
    const completed: { runId: string; epoch: number }[] = [];
    let polls = 0;
    const api: RunnerApi = {
      async leases(_free, _waitMs, abort) {
        polls += 1;
        if (polls === 1) return [first];
        if (polls === 2) {
          await regrant.promise;
          return [second];
        }
        await new Promise<void>((r) => abort?.addEventListener('abort', () => r(), { once: true }));
        return [];
      },
      heartbeat: async (leases) => {
        heartbeats.push(leases.map((l) => ({ runId: l.runId, epoch: l.epoch })));
        return { lost: [], draining: false };
      },
      events: async () => undefined,
      artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
      complete: async () => undefined,
      async completeMany(items) {
        completed.push(...items.map((i) => ({ runId: i.runId, epoch: i.epoch })));
        return { results: items.map(() => ({ outcome: 'settled' as const })) };
      },
    };
    const errors: string[] = [];
    const daemon = new RunnerDaemon({
      api,
      driver: new ProcessDriver({
        stateDir: join(dir, 'state'),
        imagesDir: join(dir, 'images'),
        slots: 4,
      }),
      key: generateSigningKey(randomBytes(32)),
      meter: () => new EnergyMeter(join(dir, 'no-powercap')),
      slots: 2,
      heartbeatMs: 20,
      log: (level, msg, fields) => {
        if (level === 'error') errors.push(`${msg}: ${JSON.stringify(fields)}`);
      },
    });
    daemon.start();
    try {
      await waitFor('the first interval executing', async () => (daemon.executing === 1 ? true : undefined));
      regrant.fire();
      await waitFor(
        'the first interval ended',
        async () =>
          daemon.ended.aborted + daemon.ended.completed + daemon.ended.failed > 0 ? true : undefined,
        60_000,
      );
      expect(daemon.ended).toEqual({ completed: 0, aborted: 1, failed: 0 });
      expect(daemon.held).toEqual([first.runId]);
      const seen = heartbeats.length;
      await waitFor(
        'a heartbeat after it',
        async () => (heartbeats.length > seen ? true : undefined),
        60_000,
      );
      expect(heartbeats.at(-1)).toEqual([{ runId: first.runId, epoch: 2 }]);
      expect(daemon.executing).toBe(1);
    } finally {
      await daemon.drain(0);
    }
    expect(completed).toEqual([]); // the killed interval sent nothing (nor the new one, killed by the drain)
    expect(errors).toEqual([]);
  }, 120_000);
});
