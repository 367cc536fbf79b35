// The runner end to end against a real control plane: pair → a command run executes in a process-driver
// sandbox → its record verifies offline with the runner's key (the built runrecord CLI); kill -9 of a runner
// mid-run → the run completes on a second runner, settled once, with exactly one executed segment, and the
// superseded attempt's late settle is refused (409 stale_lease) and changes nothing.
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dataOf, isClientError } from '@everdict/client';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import {
  buildAttestation,
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  hexToBytes,
  signAttestation,
} from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, pair, RUNRECORD_CLI, type RunnerProcess, startRunner, waitFor } from './helpers.js';

let cp: ControlPlaneProcess;
const runners: RunnerProcess[] = [];
beforeAll(async () => {
  // Artifacts past 4 KiB are refused (the first test writes one): the rest of the suite writes only small ones.
  cp = await startControlPlane({ env: { EVERDICT_ARTIFACT_MAX_BYTES: '4096' } });
});
afterAll(async () => {
  for (const r of runners) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  await cp?.stop();
});

async function runOf(id: string) {
  return dataOf(await admin(cp.url, cp.apiKey).GET('/runs/{id}', { params: { path: { id } } })) as {
    id: string;
    status: string;
    attempt?: number;
    outputs?: {
      exitCode?: number;
      result?: { stdout: string; stderr: string; truncated: boolean };
      artifacts?: unknown[];
    };
  };
}

async function wireRecord(
  id: string,
): Promise<{ segments: { kind?: string; body?: { kind?: string } }[] } & Record<string, unknown>> {
  const r = await fetch(`${cp.url}/runs/${id}/record?view=wire`, {
    headers: { authorization: `Bearer ${cp.apiKey}` },
  });
  expect(r.status).toBe(200);
  return (await r.json()) as never;
}

function executedSegments(wire: Record<string, unknown>): number {
  return JSON.stringify(wire).split('"executed"').length - 1;
}

async function runnerKey(name: string): Promise<string> {
  const keys = dataOf(await admin(cp.url, cp.apiKey).GET('/keys', {})).keys;
  const k = keys.find((x) => x.kind === 'runner' && x.name === name);
  if (!k) throw new Error(`no key for runner ${name}`);
  return k.key;
}

async function createCommandRun(command: string[]): Promise<string> {
  const post = () =>
    admin(cp.url, cp.apiKey).POST('/runs', { body: { kind: 'command', subject: { command } } as never });
  // A request that never reached the server (a keep-alive socket the server closed as it was reused, seen
  // once on this loaded machine) is sent again; any answer from the server is final.
  const answer = await post().catch((err: unknown) => {
    if (isClientError(err, 'network')) return post();
    throw err;
  });
  const created = dataOf(answer) as { id?: string; run?: { id: string } };
  const id = created.run?.id ?? created.id;
  if (!id) throw new Error(`no run id in ${JSON.stringify(created)}`);
  return id;
}

/**
 * fetch, sent again once when the connection failed (a keep-alive socket the server closed as it was reused,
 * seen on this loaded machine): both calls here are refusals that change nothing, so a repeat is harmless.
 */
async function fetchOnce(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    return fetch(url, init);
  }
}

describe('everdict-runner against the real control plane', () => {
  it('pairs, executes a command run, and its record verifies offline with the runner key', async () => {
    const dir = await pair(cp.url, cp.apiKey, 'alpha');
    expect(statSync(join(dir, 'state', 'signing.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'state', 'runner.json')).mode & 0o777).toBe(0o600);
    const runner = startRunner(dir);
    runners.push(runner);

    const id = await createCommandRun([
      'sh',
      '-c',
      'echo hello; echo oops >&2; mkdir -p out; printf art > out/a.txt; head -c 4194304 /dev/zero > out/big.bin; printf zz > out/z.txt',
    ]);
    const run = await waitFor('the command run to settle', async () => {
      const r = await runOf(id);
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    });
    expect(run.status, runner.logs()).toBe('succeeded');
    expect(run.outputs?.exitCode).toBe(0);
    expect(run.outputs?.result).toEqual({ stdout: 'hello\n', stderr: 'oops\n', truncated: false });
    expect(JSON.stringify(run.outputs?.artifacts)).toContain('a.txt');
    // Past the control plane's bound (4 KiB here): left out, and the journal says why; the run still succeeds.
    expect(JSON.stringify(run.outputs?.artifacts)).not.toContain('big.bin');
    // A 4 MiB body refused at 4 KiB: the 413 comes while the body still streams, and the upload after it goes.
    expect(JSON.stringify(run.outputs?.artifacts)).toContain('z.txt');
    const trajectory = await fetch(`${cp.url}/runs/${id}/trajectory?limit=100`, {
      headers: { authorization: `Bearer ${cp.apiKey}` },
    });
    const events = ((await trajectory.json()) as { items: { type: string; code?: string }[] }).items;
    expect(events).toContainEqual(expect.objectContaining({ type: 'error', code: 'artifact_too_large' }));

    const wire = await wireRecord(id);
    expect(executedSegments(wire)).toBe(1);
    const key = await runnerKey('alpha');
    const verify = spawnSync(process.execPath, [RUNRECORD_CLI, 'verify', '--trust-key', key], {
      input: JSON.stringify(wire),
      encoding: 'utf8',
    });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toContain(key);

    // The same record with one attested field altered no longer verifies.
    const tampered = JSON.parse(JSON.stringify(wire)) as {
      attestations: Record<string, { exit_code: number }>;
    };
    const first = Object.values(tampered.attestations)[0]!;
    first.exit_code = 7;
    const bad = spawnSync(process.execPath, [RUNRECORD_CLI, 'verify', '--trust-key', key], {
      input: JSON.stringify(tampered),
      encoding: 'utf8',
    });
    expect(bad.status).toBe(1);

    runner.child.kill('SIGTERM');
    expect(await runner.exited, runner.logs()).toBe(0);
  });

  it('kill -9 of a runner mid-run: the run completes on a second runner, one executed segment', async () => {
    const [dirA, dirB] = await Promise.all([
      pair(cp.url, cp.apiKey, 'bravo'),
      pair(cp.url, cp.apiKey, 'charlie'),
    ]);
    const a = startRunner(dirA);
    runners.push(a);
    const id = await createCommandRun(['sh', '-c', 'if [ -e /proc/self ]; then sleep 4; fi; echo finished']);
    await waitFor('runner bravo to hold the run', async () => {
      const list = dataOf(await admin(cp.url, cp.apiKey).GET('/runners', {})).items;
      return list.find((r) => r.name === 'bravo' && r.leasesHeld > 0);
    });
    a.child.kill('SIGKILL');
    await a.exited;
    const b = startRunner(dirB);
    runners.push(b);
    const run = await waitFor('the run to settle on the second runner', async () => {
      const r = await runOf(id);
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    });
    expect(run.status, b.logs()).toBe('succeeded');
    expect(run.outputs?.result?.stdout).toBe('finished\n');
    const wire = await wireRecord(id);
    expect(executedSegments(wire)).toBe(1);
    const key = await runnerKey('charlie');
    const verify = spawnSync(process.execPath, [RUNRECORD_CLI, 'verify', '--trust-key', key], {
      input: JSON.stringify(wire),
      encoding: 'utf8',
    });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);

    // The superseded attempt's late settle (bravo's credential and key, epoch 1): 409 stale_lease, and so
    // are its late events — the run, its outputs and its record are unchanged.
    const bravo = JSON.parse(readFileSync(join(dirA, 'state', 'runner.json'), 'utf8')) as {
      credential: string;
    };
    const bravoKey = generateSigningKey(
      hexToBytes(readFileSync(join(dirA, 'state', 'signing.key'), 'utf8').trim()),
    );
    const w = wire as unknown as { unit_id: Hex; grants_id: Hex; head: Hex };
    const { attestation } = buildAttestation({
      unitId: w.unit_id,
      grantsId: w.grants_id,
      recordHead: w.head,
      startedMs: 1n,
      endedMs: 2n,
      activeUj: 1n,
      provenance: 'estimated',
      meter: 'cgroup-cpu-model:10W-per-core',
      journalRoot: '0'.repeat(64) as Hex,
      outcome: 'succeeded',
      exitCode: 0,
    });
    const late = await fetchOnce(`${cp.url}/runner/v1/runs/${id}/complete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bravo.credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        epoch: 1,
        outputs: { exitCode: 0 },
        attestation: encodeAttestationBody(signAttestation(attestation, bravoKey.secretKey).body),
      }),
    });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { code: string }).code).toBe('stale_lease');
    const lateEvents = await fetchOnce(`${cp.url}/runner/v1/runs/${id}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bravo.credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ epoch: 1, events: [] }),
    });
    expect(lateEvents.status).toBe(409);
    const after = await runOf(id);
    expect({ status: after.status, attempt: after.attempt, outputs: after.outputs }).toEqual({
      status: run.status,
      attempt: run.attempt,
      outputs: run.outputs,
    });
    expect(await wireRecord(id)).toEqual(wire);

    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });
});
