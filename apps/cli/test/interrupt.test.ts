// Ctrl-C while a command waits, on a REAL control plane: the command stops, says what it saw, and exits 130
// `interrupted` — it claims nothing about how the run, the group or the turn ends. Before: `run --wait` said
// `run_failed: … ended running` (exit 1) of a run still running; `experiment` scored the unsettled group and
// exited 0; `agent chat` said `run_failed: … ended queued` (exit 1) of a turn nobody had worked on yet.
// A control plane that stops answering (SIGSTOP: it still accepts connections) no longer hangs a command
// forever: past EVERDICT_REQUEST_TIMEOUT_MS it is `unavailable` (4).
import { PassThrough, Writable } from 'node:stream';
import type { ControlPlaneProcess } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../src/program.js';
import { fileControlPlane } from './control-plane.js';

let cp: ControlPlaneProcess;
const controlPlane = fileControlPlane();
let env: Record<string, string>;

beforeAll(async () => {
  cp = await controlPlane.start();
  env = { PATH: process.env.PATH ?? '', EVERDICT_URL: cp.url, EVERDICT_API_KEY: cp.apiKey };
}, 300_000);
afterAll(async () => {
  cp?.child.kill('SIGCONT'); // were a test to leave it stopped
  await controlPlane.stop();
});

class Sink extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

/** Runs `everdict args`, presses Ctrl-C once `err` matches `ready`; its exit code and output. */
async function interrupted(args: string[], ready: RegExp) {
  const stdout = new Sink();
  const stderr = new Sink();
  const ac = new AbortController();
  const running = runCli(args, { stdout, stderr, stdin: new PassThrough(), env, signal: ac.signal });
  for (let i = 0; !ready.test(stderr.text + stdout.text); i++) {
    if (i > 2000) throw new Error(`never ready: ${stderr.text}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  ac.abort();
  const code = await running;
  return { code, out: stdout.text, err: stderr.text };
}

/** `everdict args` while the control plane is stopped (SIGSTOP: it accepts connections, answers nothing). */
async function againstStopped(args: string[], extraEnv: Record<string, string>) {
  const stdout = new Sink();
  const stderr = new Sink();
  cp.child.kill('SIGSTOP');
  try {
    const running = runCli(args, {
      stdout,
      stderr,
      stdin: new PassThrough(),
      env: { ...env, ...extraEnv },
    });
    const code = await running;
    return { code, out: stdout.text, err: stderr.text };
  } finally {
    cp.child.kill('SIGCONT');
  }
}

const SLEEP = '{"fn":"sleep","ms":60000}';

describe('Ctrl-C while waiting', () => {
  it('run --wait: exit 130 interrupted, not run_failed', async () => {
    const r = await interrupted(['run', 'analysis', '--config', SLEEP, '--wait'], /run_\w+ queued/);
    expect(r.err).not.toMatch(/run_failed/);
    expect(r.err).toMatch(/interrupted: stopped waiting: run_\w+ is still (queued|running)/);
    expect(r.code).toBe(130);
  }, 60_000);

  it('experiment: exit 130, the unsettled group is not scored', async () => {
    const r = await interrupted(['experiment', 'analysis', '-n', '2', '--config', SLEEP], /runs queued/);
    expect(r.out).not.toMatch(/scoring/);
    const said =
      /interrupted: stopped waiting: (grp_\w+) has 0 of 2 runs settled \(not scored; the rest go on: everdict cancel \1 stops them\)/.exec(
        r.err,
      );
    expect(said, r.err).not.toBeNull();
    expect(r.code).toBe(130);
    // As it says: the group's cancel stops the runs that go on (both, whichever way each stood).
    const groupId = said?.[1] ?? '';
    const out = new Sink();
    const code = await runCli(['cancel', groupId], {
      stdout: out,
      stderr: new Sink(),
      stdin: new PassThrough(),
      env,
    });
    expect(code).toBe(0);
    expect(out.text).toMatch(new RegExp(`^${groupId}: cancelled 2 runs \\(\\{"cancelled":2\\}\\)$`, 'm'));
  }, 60_000);

  it('experiment: its group cancelled from elsewhere, the progress counts the cancelled runs apart; exit 1', async () => {
    const stdout = new Sink();
    const stderr = new Sink();
    const running = runCli(['experiment', 'analysis', '-n', '2', '--config', SLEEP, '--no-score'], {
      stdout,
      stderr,
      stdin: new PassThrough(),
      env,
    });
    await vi.waitFor(() => expect(stderr.text).toMatch(/^grp_\w+: 2 analysis runs queued$/m), {
      timeout: 30_000,
    });
    const groupId = /^(grp_\w+):/m.exec(stderr.text)?.[1] ?? '';
    const cancel = await runCli(['cancel', groupId], {
      stdout: new Sink(),
      stderr: new Sink(),
      stdin: new PassThrough(),
      env,
    });
    expect(cancel).toBe(0);
    expect(await running).toBe(1);
    expect(stderr.text).toMatch(/\[#+\] 2\/2 settled · 0 running · 0 failed · 2 cancelled$/m);
    expect(stderr.text).toMatch(/run_failed: 2 of 2 runs did not succeed/);
  }, 60_000);

  it('agent chat: a turn still queued is interrupted, not failed', async () => {
    const res = await fetch(`${cp.url}/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cp.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'nobody-serves-me',
        model: 'scripted-test',
        systemPrompt: 'hi',
        tools: [],
        envelope: { usd: 1 },
      }),
    });
    expect(res.status).toBe(201);
    const { agent } = (await res.json()) as { agent: { id: string } };
    // No agent service runs here: the turn stays queued until the user gives up.
    // Once the turn exists (Ctrl-C before that cuts the message's call: nothing is claimed about it).
    const r = await interrupted(['agent', 'chat', agent.id, '-m', 'hello'], /turn run_\w+/);
    expect(r.err).not.toMatch(/run_failed/);
    expect(r.err).toMatch(/interrupted: stopped following: run_\w+ is still queued/);
    expect(r.code).toBe(130);
  }, 60_000);
});

describe('a control plane that stops answering', () => {
  it('a control plane that never answers: exit 4 past the request timeout', async () => {
    const r = await againstStopped(['runs'], { EVERDICT_REQUEST_TIMEOUT_MS: '500' });
    expect(r.err).toMatch(/unavailable - network: no answer from the control plane/);
    expect(r.code).toBe(4);
  }, 60_000);
});
