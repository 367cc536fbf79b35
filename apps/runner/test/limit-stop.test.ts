// A command the driver stops at a limit of its sandbox ended there, as observed: the interval completes failed —
// exit 137, `outputs.summary` and an `error` event naming the limit — in one attempt. Before, the driver's
// PlacementError rejected the interval: no completion, its journal abandoned, its lease left to expire, the run
// re-run up to its attempts and settled `executor_lost`. The runner asks for no limits of its own (a sandbox
// has the driver's defaults: a 1 h wall deadline); here the process driver provisions with a 1.5 s one, so
// `sleep 30` meets the `timeout` stop. And a command whose out/ the driver cannot read whole (a file its user
// made unreadable) completes failed, saying so, instead of being re-run to the same end. Real process-driver
// sandboxes; the control plane is a recording fake. So does a command whose program the sandbox cannot start (none
// by that name: exit 127; not executable: 126, as a shell counts them), where the driver refuses spawn_failed.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Driver, ProvisionSpecInput } from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import type { TraceEvent } from '@everdict/run-model';
import { decodeAttestationBody, generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import type { RunnerApi } from '../src/port.js';
import type { CompleteBody } from '../src/protocol.js';
import { leaseOf } from './fake-control-plane.js';
import { waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-limit-stop-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The process driver, each sandbox provisioned with a wall deadline of `wallTimeoutMs`. */
function withWallDeadline(driver: ProcessDriver, wallTimeoutMs: number): Driver {
  return new Proxy(driver, {
    get(target, prop) {
      if (prop === 'provision')
        return (spec: ProvisionSpecInput) => target.provision({ ...spec, limits: { wallTimeoutMs } });
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** One lease of `command` run by a daemon of one slot on `driver`, against a fake recording what comes back. */
async function runOneLease(command: string[], driver: Driver, limits?: Record<string, unknown>) {
  const leased = leaseOf(0, command);
  const lease = limits ? { ...leased, spec: { ...leased.spec, limits } } : leased;
  let granted = 0;
  const events: TraceEvent[] = [];
  const completed: (CompleteBody & { runId: string })[] = [];
  const api: RunnerApi = {
    async leases(_free, _waitMs, abort) {
      granted += 1;
      if (granted === 1) return [lease];
      await new Promise<void>((r) => abort?.addEventListener('abort', () => r(), { once: true }));
      return [];
    },
    heartbeat: async () => ({ lost: [], draining: false }),
    events: async (_runId, _epoch, batch) => {
      events.push(...batch);
    },
    artifact: async (_r, _e, path, body) => {
      for await (const _ of body);
      return { path, address: `blake3:${'0'.repeat(64)}`, size: 0 };
    },
    complete: async () => undefined,
    async completeMany(items) {
      completed.push(...items);
      return { results: items.map(() => ({ outcome: 'settled' as const })) };
    },
  };
  const errors: string[] = [];
  const daemon = new RunnerDaemon({
    api,
    driver,
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots: 1,
    log: (level, msg, fields) => {
      if (level === 'error') errors.push(`${msg}: ${JSON.stringify(fields)}`);
    },
  });
  daemon.start();
  try {
    await waitFor(
      'the interval ended',
      async () =>
        daemon.ended.aborted + daemon.ended.completed + daemon.ended.failed > 0 ? true : undefined,
      60_000,
    );
  } finally {
    await daemon.drain(0);
  }
  return { lease, events, completed, errors, ended: daemon.ended };
}

let drivers = 0;
const processDriver = () =>
  new ProcessDriver({ stateDir: join(dir, `state-${++drivers}`), imagesDir: join(dir, 'images'), slots: 2 });

describe('a command stopped at a limit of its sandbox', () => {
  it('completes its interval failed, naming the limit, in one attempt', async () => {
    const { lease, events, completed, errors, ended } = await runOneLease(
      ['sh', '-c', 'echo started; sleep 30'],
      withWallDeadline(processDriver(), 1500),
    );
    expect(errors).toEqual([]);
    expect(ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
    expect(completed).toHaveLength(1);
    const [done] = completed;
    expect(done?.runId).toBe(lease.runId);
    expect(done?.outputs).toMatchObject({
      exitCode: 137,
      summary: expect.stringContaining('timeout'),
      result: { stdout: 'started\n' },
    });
    expect(decodeAttestationBody(done?.attestation)).toMatchObject({ outcome: 'failed' });
    expect(events.filter((e) => e.type === 'error')).toMatchObject([
      { type: 'error', code: 'timeout', fatal: true },
    ]);
  }, 120_000);
});

describe('a command whose out/ cannot be read whole', () => {
  it('completes its interval failed, naming the file, with the files that could be read', async () => {
    // The sandbox user makes a file of out/ unreadable to itself: the driver's archiver cannot read it.
    const { events, completed, errors, ended } = await runOneLease(
      ['sh', '-c', 'printf a > out/a.txt && printf s > out/secret && chmod 000 out/secret'],
      processDriver(),
    );
    expect(errors).toEqual([]);
    expect(ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
    const [done] = completed;
    expect(done?.outputs).toMatchObject({
      exitCode: 0,
      summary: expect.stringMatching(/^out\/ could not be read: .*secret/),
      artifacts: [expect.objectContaining({ name: 'a.txt' })],
    });
    expect(decodeAttestationBody(done?.attestation)).toMatchObject({ outcome: 'failed' });
    expect(events.filter((e) => e.type === 'error')).toMatchObject([
      { type: 'error', code: 'artifacts_unreadable', message: expect.stringContaining('secret') },
    ]);
  }, 120_000);
});

describe('a command whose program cannot be started', () => {
  it.each([
    ['does not exist', 127, ['everdict-no-such-program-4711'], /No such file or directory/],
    ['is a directory', 126, ['/'], /Permission denied/],
  ])(
    '(it %s) completes its interval failed with exit %i, in one attempt',
    async (_what, code, argv, why) => {
      const { events, completed, errors, ended } = await runOneLease(argv, processDriver());
      expect(errors).toEqual([]);
      expect(ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
      const [done] = completed;
      expect(done?.outputs).toMatchObject({
        exitCode: code,
        summary: expect.stringMatching(/^its program could not be started: bwrap: execvp /),
      });
      expect(done?.outputs.summary).toMatch(why);
      expect(decodeAttestationBody(done?.attestation)).toMatchObject({ outcome: 'failed', exitCode: code });
      expect(events.filter((e) => e.type === 'error')).toMatchObject([
        { type: 'error', code: 'spawn_failed', fatal: true },
      ]);
    },
    120_000,
  );
});

describe("a run's expiry (--ttl: the lease's spec.limits.expiresAt)", () => {
  it("is its sandbox's wall deadline: the command is stopped there, the interval completes failed", async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const { events, completed, errors, ended } = await runOneLease(
      ['sh', '-c', 'echo started; sleep 30'],
      processDriver(),
      { expiresAt },
    );
    expect(errors).toEqual([]);
    expect(ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
    const [done] = completed;
    expect(done?.outputs).toMatchObject({ exitCode: 137, result: { stdout: 'started\n' } });
    expect(done?.outputs.summary).toMatch(new RegExp(`^its TTL ran out \\(expiresAt ${expiresAt}\\): `));
    expect(decodeAttestationBody(done?.attestation)).toMatchObject({ outcome: 'failed', exitCode: 137 });
    expect(events.filter((e) => e.type === 'error')).toMatchObject([
      { type: 'error', code: 'timeout', fatal: true },
    ]);
  }, 120_000);

  it('already past when it is leased: the command never starts, the interval completes failed', async () => {
    const expiresAt = new Date(Date.now() - 1000).toISOString();
    const { completed, errors, ended } = await runOneLease(
      ['sh', '-c', 'echo ran > out/ran; echo ran'],
      processDriver(),
      { expiresAt },
    );
    expect(errors).toEqual([]);
    expect(ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
    const [done] = completed;
    expect(done?.outputs).toMatchObject({ exitCode: 137, result: { stdout: '', stderr: '' } });
    expect(done?.outputs.artifacts).toBeUndefined(); // out/ran was never written
    expect(done?.outputs.summary).toMatch(/^its TTL ran out /);
  }, 120_000);
});
