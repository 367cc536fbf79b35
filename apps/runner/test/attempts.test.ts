// A run re-leased after its runner was killed: the new attempt runs in a sandbox of its own. Both drivers
// answer a provision for the same (tenant, run) with the sandbox already there — a killed attempt's, with its
// workspace (and, on Kubernetes, possibly its still running command) — so an interval that ran in it would
// attest what the earlier attempt left. Real process-driver sandboxes; the control plane is a recording fake.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { bytesToHex, generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { EnergyMeter } from '../src/energy.js';
import { executeInterval } from '../src/interval.js';
import type { CompletionResult, RunnerApi } from '../src/port.js';
import { type CompleteBody, Lease } from '../src/protocol.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-attempts-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hex = () => bytesToHex(randomBytes(32));

function recordingApi(): { api: RunnerApi; completed: CompleteBody[] } {
  const completed: CompleteBody[] = [];
  const api: RunnerApi = {
    leases: async () => [],
    heartbeat: async () => ({ lost: [], draining: false }),
    events: async () => undefined,
    artifact: async (_runId, _epoch, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
    complete: async (_runId, body) => {
      completed.push(body);
    },
    completeMany: async (items) => {
      completed.push(...items);
      return { results: items.map((): CompletionResult => ({ outcome: 'settled' })) };
    },
  };
  return { api, completed };
}

describe('a re-leased run', () => {
  it("runs its new attempt in a fresh sandbox, not in the killed attempt's", async () => {
    const stateDir = join(dir, 'state');
    const tenant = 'acme';
    const runId = `run-${randomBytes(4).toString('hex')}`;
    // Attempt 1's runner: provisioned the run's sandbox, its command wrote into the workspace, then the
    // runner died (a driver instance that never disposes stands for it; a restarted runner's driver adopts it).
    const first = new ProcessDriver({ stateDir, imagesDir: join(dir, 'images') });
    const old = await first.provision({ labels: { tenant, runId, kind: 'command' } });
    expect((await first.exec(old, ['sh', '-c', 'echo attempt-1 > leftover'])).exitCode).toBe(0);

    const driver = new ProcessDriver({ stateDir, imagesDir: join(dir, 'images') });
    const { api, completed } = recordingApi();
    const lease = Lease.parse({
      runId,
      tenant,
      kind: 'command',
      epoch: 2,
      attempt: 2,
      spec: {
        kind: 'command',
        subject: { command: ['sh', '-c', 'if [ -e leftover ]; then exit 3; fi; echo fresh'] },
      },
      unitId: hex(),
      grantsId: hex(),
      recordHead: hex(),
      leaseMs: 30_000,
      heartbeatMs: 10_000,
      seqFrom: 4,
    });
    const deps = {
      api,
      driver,
      key: generateSigningKey(randomBytes(32)),
      meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    };
    expect(await executeInterval(lease, deps, new AbortController().signal)).toBe('completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]?.outputs).toMatchObject({ exitCode: 0, result: { stdout: 'fresh\n' } });
    // the interval disposed what it ran in, and nothing of attempt 1 is left for the run
    expect(await driver.reap({ labels: { tenant, runId } })).toEqual([]);
    await expect(first.exec(old, ['true'])).rejects.toMatchObject({ code: 'gone' });
  });
});
