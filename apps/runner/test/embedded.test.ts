// `pnpm start`'s embedded runner: the built control plane (dist/main.js) with its default environment pairs
// a runner with itself and runs it as a child process — a command run executes with no configuration, and
// its record verifies offline with that runner's key. Stopping the control plane stops the runner too.
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dataOf } from '@everdict/client';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, RUNRECORD_CLI, scratch, waitFor } from './helpers.js';

let cp: ControlPlaneProcess;
let dataDir: string;
beforeAll(async () => {
  dataDir = scratch('everdict-embedded-');
  cp = await startControlPlane({ embeddedRunner: true, dataDir });
});
afterAll(async () => {
  await cp?.stop();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the embedded runner (EVERDICT_EMBEDDED_RUNNER default)', () => {
  it('executes a command run on a fresh machine; the record verifies with the runner key', async () => {
    const client = admin(cp.url, cp.apiKey);
    const created = dataOf(
      await client.POST('/runs', {
        body: { kind: 'command', subject: { command: ['echo', 'hi'] } } as never,
      }),
    ) as { run: { id: string } };
    const id = created.run.id;
    const run = await waitFor('the command run to settle', async () => {
      const r = dataOf(await client.GET('/runs/{id}', { params: { path: { id } } })) as {
        status: string;
        outputs?: { exitCode?: number; result?: { stdout: string } };
      };
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    });
    expect(run.status, cp.logs().slice(-4000)).toBe('succeeded');
    expect(run.outputs?.exitCode).toBe(0);
    expect(run.outputs?.result?.stdout).toBe('hi\n');

    // The runner's key: made by the runner under the data directory, mode 0600, listed by GET /keys.
    const keyFile = join(dataDir, 'runner', 'state', 'signing.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const keys = dataOf(await client.GET('/keys', {})).keys;
    const entry = keys.find((k) => k.kind === 'runner' && k.name === 'embedded');
    expect(entry).toBeDefined();
    const pairing = JSON.parse(readFileSync(join(dataDir, 'runner', 'state', 'runner.json'), 'utf8')) as {
      publicKey: string;
    };
    expect(entry?.key).toBe(pairing.publicKey);

    const wire = await fetch(`${cp.url}/runs/${id}/record?view=wire`, {
      headers: { authorization: `Bearer ${cp.apiKey}` },
    }).then((r) => r.json());
    const verify = spawnSync(process.execPath, [RUNRECORD_CLI, 'verify', '--trust-key', entry!.key], {
      input: JSON.stringify(wire),
      encoding: 'utf8',
    });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);

    // The runner is a child of the control plane and stops with it.
    const line = cp
      .logs()
      .split('\n')
      .find((l) => l.includes('"embedded runner started"'));
    const pid = Number((JSON.parse(line ?? '{}') as { childPid?: number }).childPid);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(true);
    await cp.stop();
    await waitFor('the embedded runner to exit with its control plane', async () =>
      alive(pid) ? undefined : true,
    );
  });
});
