// Sessions on a runner whose channel ANOTHER replica holds (the relay, apps/control-plane
// src/runners/sessions/relay.ts): two built control planes on one live PostgreSQL (sharing the data
// directory's object store), a built `everdict-runner` on real bubblewrap sandboxes connected to replica A
// only — and the client talks to replica B. Open, exec, the terminal (echo, resize, exit), suspend and resume
// (byte for byte) and close all work from B; the trajectory records each exec and each terminal byte exactly
// once. Then A is killed: B answers 503 sandbox_unavailable (runner_unreachable) and nothing changes.
// Live PostgreSQL only (EVERDICT_TEST_DATABASE_URL; CI's database pass runs this file, .ci/run).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  apiCall,
  type Json,
  pair,
  type RunnerProcess,
  resizeUntilShown,
  scratch,
  startRunner,
  waitFor,
} from './helpers.js';

const TEST_DATABASE_URL = process.env.EVERDICT_TEST_DATABASE_URL?.trim() || undefined;
if (!TEST_DATABASE_URL)
  console.warn('test/sessions-replicas.pg.test.ts: skipped — set EVERDICT_TEST_DATABASE_URL to run it');

function psql(url: string, command: string): void {
  const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-Atc', command], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql ${command}: ${r.stderr || r.error}`);
}
const query = (url: string, q: string): string => {
  const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-Atc', q], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql ${q}: ${r.stderr || r.error}`);
  return r.stdout.trim();
};

/** The run ids of the session sandboxes a runner's process driver holds (its label files). */
function sandboxRuns(dir: string): string[] {
  const d = join(dir, 'placement', 'sandboxes');
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((f) => f.endsWith('.json'))
    .flatMap((f) => {
      try {
        return [
          (JSON.parse(readFileSync(join(d, f), 'utf8')) as { handle: { labels: { runId: string } } }).handle
            .labels.runId,
        ];
      } catch {
        return [];
      }
    });
}

const WRITE = [
  'sh',
  '-c',
  'mkdir -p d/e && printf "\\000\\001\\377binary" > d/e/bin && echo hello > a.txt && ln -s a.txt link && chmod 750 a.txt && head -c 300000 /dev/urandom > d/rand && mkdir empty',
];
const DIGEST = [
  'sh',
  '-c',
  'find . | LC_ALL=C sort | while read f; do stat -c "%n %a %F" "$f"; [ -f "$f" ] && [ ! -L "$f" ] && sha256sum "$f"; done; readlink link',
];

describe.runIf(TEST_DATABASE_URL)('a runner held by replica A, driven from replica B (the relay)', () => {
  const dbName = `everdict_relay_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let dbUrl = '';
  let shared = '';
  let a: ControlPlaneProcess;
  let b: ControlPlaneProcess;
  let dir = '';
  let runnerId = '';
  let runner: RunnerProcess | null = null;

  beforeAll(async () => {
    const u = new URL(TEST_DATABASE_URL ?? '');
    psql(u.toString(), `CREATE DATABASE ${dbName}`);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
    shared = scratch('cp-relay-');
    const env = {
      DATABASE_URL: dbUrl,
      EVERDICT_SESSIONS: 'runner',
      // A long lease: "nothing changes" below is not raced by the lost-runner sweep.
      EVERDICT_LEASE_MS: '60000',
      EVERDICT_SESSION_SWEEP_MS: '500',
      EVERDICT_BOOTSTRAP_API_KEY: `evd_test_${randomBytes(16).toString('hex')}`,
      EVERDICT_INTERNAL_TOKEN: `internal-${randomBytes(16).toString('hex')}`,
    };
    a = await startControlPlane({ dataDir: shared, env });
    b = await startControlPlane({ dataDir: shared, env });
    dir = await pair(a.url, a.apiKey, 'relay');
    runnerId = (JSON.parse(readFileSync(join(dir, 'state', 'runner.json'), 'utf8')) as { runnerId: string })
      .runnerId;
    const r = startRunner(dir);
    runner = r;
    await waitFor('the runner session channel', async () =>
      r.logs().includes('session channel open') ? true : undefined,
    );
    // One channel, on A (the runner only knows A's address).
    await waitFor('the channel row', async () =>
      query(dbUrl, 'SELECT count(*) FROM session_channels') === '1' ? true : undefined,
    );
  }, 300_000);

  afterAll(async () => {
    if (runner && runner.child.exitCode === null && runner.child.signalCode === null)
      runner.child.kill('SIGKILL');
    await a?.stop();
    await b?.stop();
    if (TEST_DATABASE_URL) psql(TEST_DATABASE_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  const onB = (method: string, path: string, body?: unknown) => apiCall(b, method, path, body);
  const onA = (method: string, path: string, body?: unknown) => apiCall(a, method, path, body);
  const exec = async (via: typeof onB, id: string, command: string[]) => {
    const r = await via('POST', `/sandboxes/${id}/exec`, { command });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const open = async (via: typeof onB) => {
    const r = await via('POST', '/sandboxes', {
      ttlSec: 600,
      idleTimeoutSec: 600,
      placement: { where: 'driver', isolation: 'process', target: runnerId },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.run.id as string;
  };
  const trajectory = async (id: string): Promise<Json[]> =>
    (await onA('GET', `/runs/${id}/trajectory?limit=1000`)).body.items as Json[];

  it('open, exec, terminal (echo, resize, exit) and close from B; each recorded exactly once', async () => {
    const id = await open(onB);
    expect(sandboxRuns(dir)).toContain(id);
    expect((await onB('GET', `/sandboxes/${id}`)).body).toMatchObject({
      holder: `runner:${runnerId}`,
      state: 'open',
    });
    expect(await exec(onB, id, ['sh', '-c', 'echo hi; echo err >&2; exit 3'])).toMatchObject({
      exitCode: 3,
      stdout: 'hi\n',
      stderr: 'err\n',
    });
    // A large output crosses the relay whole (several frames' worth of rows).
    const big = await exec(onB, id, ['sh', '-c', 'head -c 600000 /dev/zero | tr "\\0" x']);
    expect(big.stdout).toBe('x'.repeat(600_000));

    // What the relay costs an exec: `true` through A (the holder, local) and through B, alternately.
    const took: Record<'local' | 'relayed', number[]> = { local: [], relayed: [] };
    for (let i = 0; i < 10; i++)
      for (const [k, via] of [
        ['local', onA],
        ['relayed', onB],
      ] as const) {
        const t0 = performance.now();
        await exec(via, id, ['true']);
        took[k].push(performance.now() - t0);
      }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
    console.log(
      `BENCH relay exec median local ${median(took.local).toFixed(1)} ms, relayed ${median(took.relayed).toFixed(1)} ms (10 each)`,
    );

    const t = await onB('POST', `/runs/${id}/terminal-ticket`);
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const ws = new WebSocket(
      `${b.url.replace('http', 'ws')}/runs/${id}/terminal?ticket=${encodeURIComponent(t.body.ticket)}&cols=100&rows=30`,
    );
    let out = '';
    const texts: string[] = [];
    ws.on('message', (data, isBinary) => {
      if (isBinary) out += String(data);
      else texts.push(String(data));
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(Buffer.from('echo "sum=$((6*7))"; stty size\n'), { binary: true });
    await waitFor('the terminal to echo', async () => (out.includes('sum=42') ? true : undefined), 60_000);
    await waitFor('the initial size', async () => (out.includes('30 100') ? true : undefined), 60_000);
    // Output in order: 2000 numbered lines arrive in sequence.
    ws.send(Buffer.from('seq 1 2000 | tr "\\n" ,; echo END\n'), { binary: true });
    await waitFor('the sequence', async () => (/2000,END/.test(out) ? true : undefined), 60_000);
    const seq = Array.from({ length: 2000 }, (_, i) => i + 1).join(',');
    expect(out).toContain(`${seq},END`);
    const asked = await resizeUntilShown(ws, () => out, { cols: 120, rows: 40 });
    ws.send(Buffer.from('exit 0\n'), { binary: true });
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    expect(await closed).toBe(1000);
    expect(texts.map((x) => JSON.parse(x))).toEqual([{ type: 'exit', code: 0 }]);

    // Recorded once: two exec calls, and the terminal's input bytes once each.
    const events = await waitFor(
      'the terminal bytes recorded',
      async () => {
        const ev = await trajectory(id);
        const input = ev
          .filter((e) => e.ext === 'everdict/terminal' && e.data?.dir === 'in')
          .map((e) => Buffer.from(e.data.data as string, 'base64').toString('utf8'))
          .join('');
        return input.endsWith('exit 0\n') ? ev : undefined;
      },
      30_000,
    );
    expect(events.filter((e) => e.type === 'tool_call')).toHaveLength(22);
    const input = events
      .filter((e) => e.ext === 'everdict/terminal' && e.data?.dir === 'in')
      .map((e) => Buffer.from(e.data.data as string, 'base64').toString('utf8'))
      .join('');
    expect(input).toMatch(
      /^echo "sum=\$\(\(6\*7\)\)"; stty size\nseq 1 2000 \| tr "\\n" ,; echo END\n(stty size\n)+exit 0\n$/,
    );
    expect(input.split('stty size\n').length - 1).toBe(asked + 1);

    const c = await onB('POST', `/sandboxes/${id}/close`);
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'succeeded', outputs: { result: { endReason: 'closed' } } });
    expect(sandboxRuns(dir)).not.toContain(id);
  }, 240_000);

  it('suspend on B, resume on B and again on A: the workspace byte for byte; idle metered', async () => {
    // Metered like an embedded session: open and parked time charged at the tenant's sessionUsdPerHour.
    const policy = await onB('PATCH', '/tenant/policy', { sessionUsdPerHour: 36 });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);
    const id = await open(onA);
    expect((await exec(onB, id, WRITE)).exitCode).toBe(0);
    const digest = (await exec(onB, id, DIGEST)).stdout as string;
    expect(digest).toContain('./d/e/bin');

    const parked = await onB('POST', `/sandboxes/${id}/suspend`);
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    expect(parked.body.status).toBe('awaiting_input');
    expect(sandboxRuns(dir)).not.toContain(id);
    const resumed = await onB('POST', `/sandboxes/${id}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(sandboxRuns(dir)).toContain(id);
    expect((await exec(onB, id, DIGEST)).stdout).toBe(digest);

    // Parked from B again, resumed on A (the holder itself).
    expect((await onB('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    const again = await onA('POST', `/sandboxes/${id}/resume`, {});
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await exec(onA, id, DIGEST)).stdout).toBe(digest);
    const rec = (await onB('GET', `/runs/${id}/record`)).body;
    expect(rec.verify).toMatchObject({ ok: true });
    expect(BigInt(rec.verify.idleUj ?? '0')).toBeGreaterThan(0n);

    const c = await onB('POST', `/sandboxes/${id}/close`);
    expect(c.body.status).toBe('succeeded');
    expect(c.body.usage.costUsd).toBeGreaterThan(0);
    expect(sandboxRuns(dir)).not.toContain(id);
  }, 240_000);

  it('touch from B extends the expiry; a session opened from B expires and is reaped: the sandbox disposed', async () => {
    const r = await onB('POST', '/sandboxes', {
      ttlSec: 3,
      idleTimeoutSec: 600,
      placement: { where: 'driver', isolation: 'process', target: runnerId },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const id = r.body.run.id as string;
    expect(sandboxRuns(dir)).toContain(id);
    const before = (await onB('GET', `/sandboxes/${id}`)).body.expiresAt as string;
    const touched = await onB('POST', `/sandboxes/${id}/touch`, { ttlSec: 4 });
    expect(touched.status, JSON.stringify(touched.body)).toBe(200);
    expect(Date.parse(touched.body.expiresAt)).toBeGreaterThan(Date.parse(before));
    // Either replica's reaper settles it; the runner's sandbox goes with it (relayed when B sweeps).
    const settled = await waitFor(
      'the expired session settled',
      async () => {
        const run = (await onB('GET', `/runs/${id}`)).body;
        return run.status === 'succeeded' ? run : undefined;
      },
      60_000,
    );
    expect(settled.outputs.result.endReason).toBe('expired');
    await waitFor('the sandbox disposed on the runner', async () =>
      sandboxRuns(dir).includes(id) ? undefined : true,
    );
  }, 120_000);

  it('the holder replica gone: B answers 503 runner_unreachable and nothing changes', async () => {
    const id = await open(onB);
    const stable = (v: Json) => ({
      state: v.state,
      holder: v.holder,
      expiresAt: v.expiresAt,
      idleDeadline: v.idleDeadline,
      lastActivityAt: v.lastActivityAt,
      snapshot: v.snapshot,
    });
    const before = stable((await onB('GET', `/sandboxes/${id}`)).body);
    const runBefore = (await onB('GET', `/runs/${id}`)).body;
    a.child.kill('SIGKILL');
    await new Promise<void>((r) =>
      a.child.exitCode !== null || a.child.signalCode !== null ? r() : a.child.once('exit', () => r()),
    );
    for (const [path, body] of [
      [`/sandboxes/${id}/exec`, { command: ['true'] }],
      [`/sandboxes/${id}/suspend`, undefined],
    ] as const) {
      const r = await onB('POST', path, body);
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body).toMatchObject({ code: 'sandbox_unavailable', reason: 'runner_unreachable' });
    }
    expect(stable((await onB('GET', `/sandboxes/${id}`)).body)).toEqual(before);
    const runAfter = (await onB('GET', `/runs/${id}`)).body;
    expect(runAfter.status).toBe('running');
    expect(runAfter.updatedAt).toBe(runBefore.updatedAt);
    expect(sandboxRuns(dir)).toContain(id); // the runner's sandbox untouched
  }, 240_000);
});
