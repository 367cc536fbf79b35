// The runner's lease lifecycle end to end (the built control plane and the built everdict-runner as child
// processes, real process-driver sandboxes): cancellation reaches the runner within a heartbeat and kills
// the compute; a network grant on the run is the only way its sandbox gets a network (and then it reports
// no account); `kill -9` of the control plane while runners hold leases loses no run and settles none twice.

import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dataOf, isClientError } from '@everdict/client';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { admin, pair, type RunnerProcess, scratch, startRunner, waitFor } from './helpers.js';

const cps: ControlPlaneProcess[] = [];
const runners: RunnerProcess[] = [];
afterAll(async () => {
  for (const r of runners) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  for (const cp of cps) await cp.stop().catch(() => {});
});

interface RunView {
  id: string;
  status: string;
  attempt?: number;
  outputs?: { exitCode?: number; result?: { stdout: string; stderr: string } };
}

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'expired'];

async function runOf(cp: ControlPlaneProcess, id: string): Promise<RunView> {
  return dataOf(await admin(cp.url, cp.apiKey).GET('/runs/{id}', { params: { path: { id } } })) as RunView;
}

async function create(cp: ControlPlaneProcess, body: Record<string, unknown>): Promise<string> {
  const post = () => admin(cp.url, cp.apiKey).POST('/runs', { body: body as never });
  // A request that never reached the server (a keep-alive socket closed as it was reused, seen once on a
  // loaded machine) is sent again; any answer from the server is final.
  const answer = await post().catch((err: unknown) => {
    if (isClientError(err, 'network')) return post();
    throw err;
  });
  const created = dataOf(answer) as { run: { id: string } };
  return created.run.id;
}

async function settled(cp: ControlPlaneProcess, id: string): Promise<RunView> {
  return waitFor(`run ${id} to settle`, async () => {
    const r = await runOf(cp, id).catch(() => undefined);
    return r && TERMINAL.includes(r.status) ? r : undefined;
  });
}

async function record(cp: ControlPlaneProcess, id: string) {
  const r = await fetch(`${cp.url}/runs/${id}/record`, { headers: { authorization: `Bearer ${cp.apiKey}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as { wire: unknown; verify: { ok: boolean; account?: string } };
}

const executedSegments = (wire: unknown) =>
  (wire as { segments: { kind: string }[] }).segments.filter((s) => s.kind === 'executed').length;

/** Processes whose command line contains `marker` (the sandboxed command, found through /proc). */
function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(marker)) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The bwrap processes whose parent is `pid`. */
/** bubblewrap processes started for the runner: its children, or its spawner's (placement-process spawner/). */
function bwrapChildren(pid: number): number[] {
  const procs: Array<{ pid: number; ppid: number; comm: string }> = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // A zombie (state Z) is not a running sandbox.
      if (fields[0] !== 'Z') procs.push({ pid: Number(d), ppid: Number(fields[1]), comm });
    } catch {
      // gone meanwhile
    }
  }
  const parents = new Set([
    pid,
    ...procs.filter((p) => p.ppid === pid && p.comm !== 'bwrap').map((p) => p.pid),
  ]);
  return procs.filter((p) => parents.has(p.ppid) && p.comm === 'bwrap').map((p) => p.pid);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('cancellation, network grants and accounts', () => {
  // One control plane and one runner for the first two tests, made here: neither depends on the other having
  // run, or passed (the second took the first's control plane from `cps[0]`).
  let cp: ControlPlaneProcess;
  let runner: RunnerProcess;
  beforeAll(async () => {
    cp = await startControlPlane();
    cps.push(cp);
    runner = startRunner(await pair(cp.url, cp.apiKey, 'canceller'));
    runners.push(runner);
    // A control plane's start and a pairing: more than the 300-s default on this 2-core machine at load 30
    // (measured: the hook timed out there).
  }, 900_000);

  it('cancel reaches the runner within a heartbeat: the sandbox is killed, the run cancelled, no executed segment', async () => {
    // An hour's sleep: only the runner ends it. (A 60-s one ended by itself at load 30 before the cancel
    // reached the runner — the sandbox gone, but no lease lost to log.)
    const marker = `3600.${randomBytes(3).readUIntBE(0, 3)}`;
    onTestFinished(() => {
      for (const pid of processesWith(marker)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    });
    const id = await create(cp, { kind: 'command', subject: { command: ['sleep', marker] } });
    await waitFor('the sandboxed sleep to run', async () =>
      processesWith(marker).length > 0 ? true : undefined,
    );
    expect(bwrapChildren(runner.child.pid!).length).toBeGreaterThan(0);
    const cancel = await fetch(`${cp.url}/runs/${id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cp.apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cancel.status).toBeLessThan(300);
    // The next heartbeat answers the lease `lost`; the runner kills the sandbox (no bwrap child is left).
    await waitFor('the sandbox to be killed', async () =>
      processesWith(marker).length === 0 && bwrapChildren(runner.child.pid!).length === 0 ? true : undefined,
    );
    // Logged before the kill, so already there; else the runner's log says what ended the sandbox instead.
    await waitFor('the runner to log the lost lease', async () =>
      runner.logs().includes('lease lost: killing its compute') ? true : undefined,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the runner logged:\n${runner.logs()}`);
    });
    const run = await runOf(cp, id);
    expect(run.status).toBe('cancelled');
    const rec = await record(cp, id);
    expect(executedSegments(rec.wire)).toBe(0);
    // Three condition waits of up to 480 s each: the file's 600-s default was shorter than their sum.
  }, 1_800_000);

  it('no network without a grant; a granted run sees the host network and reports no account (no_verdict)', async () => {
    const netdev = ['sh', '-c', 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'];
    const closed = await create(cp, { kind: 'command', subject: { command: netdev } });
    const open = await create(cp, {
      kind: 'command',
      subject: { command: netdev },
      placement: { where: 'driver', isolation: 'process', network: 'granted' },
    });
    const [c, o] = [await settled(cp, closed), await settled(cp, open)];
    expect(c.status).toBe('succeeded');
    expect(o.status).toBe('succeeded');
    expect(c.outputs?.result?.stdout.trim().split('\n')).toEqual(['lo']);
    const hostInterfaces = readFileSync('/proc/net/dev', 'utf8')
      .split('\n')
      .slice(2)
      .map((l) => l.split(':')[0]!.trim())
      .filter((n) => n !== '')
      .sort();
    expect(o.outputs?.result?.stdout.trim().split('\n').sort()).toEqual(hostInterfaces);
    // "Accounted, no calls" where the runner built a sandbox with no way out; nothing claimed otherwise.
    const closedRecord = await record(cp, closed);
    const openRecord = await record(cp, open);
    expect(closedRecord.verify).toMatchObject({ ok: true, account: 'non_blocking' });
    expect(openRecord.verify).toMatchObject({ ok: true, account: 'no_verdict' });
    // The grant is part of the run's grants: the record binds it (another grants id than the closed run's).
    const grantsOf = (w: unknown) => (w as { grants_id: string }).grants_id;
    expect(grantsOf(openRecord.wire)).not.toBe(grantsOf(closedRecord.wire));
    runner.child.kill('SIGTERM');
  });

  it('kill -9 of the control plane while runners hold leases: after a restart no run is lost or settled twice', async () => {
    const dataDir = scratch('everdict-cp-restart-');
    const port = await freePort();
    const env = {
      PORT: String(port),
      EVERDICT_BOOTSTRAP_API_KEY: `evd_test_${randomBytes(16).toString('hex')}`,
      EVERDICT_INTERNAL_TOKEN: `internal-${randomBytes(16).toString('hex')}`,
    };
    const first = await startControlPlane({ dataDir, env });
    cps.push(first);
    const [dirA, dirB] = await Promise.all([
      pair(first.url, first.apiKey, 'r1', 2),
      pair(first.url, first.apiKey, 'r2', 2),
    ]);
    const a = startRunner(dirA);
    const b = startRunner(dirB);
    runners.push(a, b);
    // Both runners alive (a heartbeat each: their lease loops are polling) before the runs exist: a runner
    // still starting on a loaded machine would otherwise leave all four runs to the other one.
    await waitFor('both runners to heartbeat', async () => {
      const list = dataOf(await admin(first.url, first.apiKey).GET('/runners', {})).items;
      return list.filter((r) => r.lastHeartbeatAt !== null).length === 2 ? true : undefined;
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        await create(first, {
          kind: 'command',
          subject: { command: ['sh', '-c', `sleep 5; echo run-${i}`] },
        }),
      );
    await waitFor('both runners to hold leases', async () => {
      const list = dataOf(await admin(first.url, first.apiKey).GET('/runners', {})).items;
      return list.filter((r) => r.leasesHeld > 0).length === 2 ? true : undefined;
    });
    first.child.kill('SIGKILL');
    await new Promise<void>((r) => first.child.once('exit', () => r()));

    const second = await startControlPlane({ dataDir, env });
    cps.push(second);
    const runs = await Promise.all(ids.map((id) => settled(second, id)));
    for (const [i, run] of runs.entries()) {
      expect(run.status, `${a.logs()}\n${b.logs()}`).toBe('succeeded');
      expect(run.outputs?.result?.stdout).toBe(`run-${i}\n`);
      const rec = await record(second, run.id);
      expect(rec.verify.ok).toBe(true);
      expect(executedSegments(rec.wire)).toBe(1);
    }
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    // Two control plane starts, a lease expiry and the runs again: minutes on a loaded 2-core machine.
  }, 900_000);
});
