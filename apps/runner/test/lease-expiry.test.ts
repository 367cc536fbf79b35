// A lease no heartbeat renews ends at its `leaseMs`: the control plane requeues its run to another runner, so
// this runner kills the interval there instead of running on unleased (and sends nothing for it); a lease the
// heartbeats renew runs past its first `leaseMs`. Real process-driver sandboxes; the control plane is a fake.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError } from '@everdict/client';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import { Lease } from '../src/protocol.js';
import { leaseOf } from './fake-control-plane.js';
import { waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-expiry-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function daemonFor(lease: Lease, heartbeat: RunnerApi['heartbeat']) {
  const completed: string[] = [];
  const warnings: string[] = [];
  let granted = false;
  const api: RunnerApi = {
    async leases(_free, _waitMs, abort) {
      if (!granted) {
        granted = true;
        return [lease];
      }
      await new Promise<void>((r) => abort?.addEventListener('abort', () => r(), { once: true }));
      return [];
    },
    heartbeat,
    events: async () => undefined,
    artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
    complete: async () => undefined,
    async completeMany(items) {
      completed.push(...items.map((i) => i.runId));
      return { results: items.map(() => ({ outcome: 'settled' as const })) };
    },
  };
  const daemon = new RunnerDaemon({
    api,
    driver: new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images'), slots: 2 }),
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots: 1,
    heartbeatMs: 50,
    log: (level, msg) => {
      if (level === 'warn') warnings.push(msg);
    },
  });
  return { daemon, completed, warnings };
}

const ended = (d: RunnerDaemon) =>
  d.ended.aborted + d.ended.completed + d.ended.failed > 0 ? true : undefined;

describe('lease expiry without a renewal', () => {
  it('heartbeats failing past leaseMs: the interval is killed and sends nothing', async () => {
    const lease = Lease.parse({ ...leaseOf(0, ['sleep', '120']), leaseMs: 1000 });
    const { daemon, completed, warnings } = daemonFor(lease, async () => {
      throw new ClientError('network', 0, 'no answer from the control plane');
    });
    daemon.start();
    try {
      await waitFor('the interval ended', async () => ended(daemon), 60_000);
      expect(daemon.ended).toEqual({ completed: 0, aborted: 1, failed: 0 });
      expect(warnings).toContain('lease expired without a renewal: killing its compute');
      expect(completed).toEqual([]);
    } finally {
      await daemon.drain(0);
    }
  }, 120_000);

  it('heartbeats renewing it: the interval runs past its first leaseMs and completes', async () => {
    const lease = Lease.parse({ ...leaseOf(1, ['sleep', '2']), leaseMs: 1000 });
    const { daemon, completed } = daemonFor(lease, async () => ({ lost: [], draining: false }));
    daemon.start();
    try {
      await waitFor('the interval ended', async () => ended(daemon), 60_000);
      expect(daemon.ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
      expect(completed).toEqual([lease.runId]);
    } finally {
      await daemon.drain(0);
    }
  }, 120_000);
});
