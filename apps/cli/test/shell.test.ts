// `everdict sandbox shell` through a REAL pty: util-linux `script -qec` gives the built CLI
// (`dist/main.js`) a terminal, against the built control plane (a child process on embedded PGlite) with
// the embedded session placement (`EVERDICT_SESSIONS=process`: a real bubblewrap sandbox). What goes into
// the pty reaches the remote shell raw; the local terminal's size is the remote pty's, and a resize of it
// (SIGWINCH) follows; the remote `exit 3` is the CLI's exit code 3. Then, in-process: stdin that is a pipe
// ends as Ctrl-D, a refused ticket is exit 3, and the demo's sandbox step opens a terminal too.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneProcess } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Demo } from '../src/commands/demo.js';
import { makeContext } from '../src/context.js';
import { runCli } from '../src/program.js';
import { everdict, Sink } from './capture.js';
import { fileControlPlane } from './control-plane.js';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const SCRIPT = '/usr/bin/script';

let cp: ControlPlaneProcess;
const controlPlane = fileControlPlane({ env: { EVERDICT_SESSIONS: 'process' } });
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  // Never skipped: without util-linux `script` (Debian bsdutils) or the built CLI this suite fails.
  if (!existsSync(SCRIPT)) throw new Error(`no ${SCRIPT}: apt-get install bsdutils (util-linux script)`);
  if (!existsSync(CLI)) throw new Error(`no ${CLI}: pnpm --filter @everdict/cli build`);
  dir = mkdtempSync(join(tmpdir(), 'cli-shell-'));
  cp = await controlPlane.start();
  env = { EVERDICT_URL: cp.url, EVERDICT_API_KEY: cp.apiKey };
}, 300_000);
afterAll(async () => {
  await controlPlane.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openSandbox(): Promise<string> {
  const open = await everdict(['sandbox', 'open', '--ttl', '600', '--idle', '600', '--json'], env);
  expect(open.code, open.err).toBe(0);
  return (JSON.parse(open.out) as { run: { id: string } }).run.id;
}

/** Waits until `check()` holds, or fails at `deadline` naming what it waited for and what the pty printed. */
async function until(what: string, check: () => boolean, out: () => string, deadline: number): Promise<void> {
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the pty printed:\n${out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Writes a line into the FIFO if its reader holds it open (never blocks); false if none does yet. */
function release(fifo: string): boolean {
  try {
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    try {
      writeSync(fd, 'go\n');
    } finally {
      closeSync(fd);
    }
    return true;
  } catch {
    return false; // ENXIO: no reader (not yet, or gone)
  }
}

describe('sandbox shell through a real pty (script -qec)', () => {
  it('raw keys reach the remote shell, the size and its change follow, `exit 3` exits 3', async () => {
    // One budget for every wait below, inside the test's timeout: a slow step fails naming itself and what
    // the pty printed, not as an anonymous test timeout (CI at load 30–40: "timed out in 240000ms").
    const deadline = Date.now() + 280_000;
    const id = await openSandbox();
    const token = randomBytes(6).toString('hex');
    const go = join(dir, `resize-${token}`);
    execFileSync('mkfifo', [go]);
    // Inside the pty: set its size, then (in the background, once the test writes into the FIFO) change it —
    // the kernel sends the foreground CLI SIGWINCH — and exec the CLI in the foreground. The background part
    // blocks in `read` (the FIFO opened read-write: the open never blocks; bounded by `timeout`), not a
    // `sleep 0.1` loop that forked ten processes a second on a machine already short of CPU.
    const inside = [
      'stty cols 100 rows 30',
      `(timeout 290 sh -c 'exec 3<>"$0"; read _ <&3' '${go}'; stty cols 120 rows 40 </dev/tty) &`,
      `exec '${process.execPath}' '${CLI}' sandbox shell ${id}`,
    ].join('\n');
    const child: ChildProcess = spawn(SCRIPT, ['-qec', inside, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const type = (text: string) => child.stdin?.write(text);
    try {
      // The expansions run remotely: their results are not in what was typed (which the ptys echo).
      type('stty size; echo ready-$((6*7))\n');
      await until(
        'the remote shell',
        () => out.includes('ready-42'),
        () => out,
        deadline,
      );
      expect(out).toContain('30 100'); // the local pty's size at connect is the remote pty's
      // Raw mode: Ctrl-C is a byte for the remote shell (it interrupts the remote sleep), not a SIGINT for
      // the CLI — in cooked mode the sleep would run on and `int-7` would not come for ten minutes.
      type('sleep 600; echo not-$((1+1))\n');
      await until(
        'the remote sleep',
        () => out.includes('sleep 600'),
        () => out,
        deadline,
      );
      type('\x03');
      type('echo int-$((3+4))\n');
      await until(
        'the interrupted shell',
        () => out.includes('int-7'),
        () => out,
        deadline,
      );
      expect(out).not.toContain('not-2');
      await until(
        'the resizer to hold its FIFO',
        () => release(go),
        () => out,
        deadline,
      );
      // Resized locally (SIGWINCH → {"type":"resize"}): ask the remote pty until it reports the new size,
      // at growing intervals (each ask is a process in the sandbox).
      for (let wait = 250; !out.includes('40 120'); wait = Math.min(wait * 2, 4_000)) {
        if (Date.now() > deadline) throw new Error(`the resize never reached the remote pty:\n${out}`);
        type('stty size\n');
        const asked = Date.now();
        await until(
          '',
          () => out.includes('40 120') || Date.now() - asked >= wait,
          () => out,
          Infinity,
        );
      }
      type(`echo hello-${token}-$((40+2)); exit 3\n`);
      await until(
        'the CLI to exit',
        () => child.exitCode !== null || child.signalCode !== null,
        () => out,
        deadline,
      );
      expect(await exited).toBe(3);
      expect(out).toContain(`hello-${token}-42`);
    } finally {
      release(go);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // The session outlives its terminal.
    const exec = await everdict(['sandbox', 'exec', id, '--', 'sh', '-c', 'echo still-$((1+1))'], env);
    expect(exec.code, exec.err).toBe(0);
    expect(exec.out).toContain('still-2');
    expect((await everdict(['sandbox', 'close', id], env)).code).toBe(0);
  }, 300_000);

  it('stdin that is a pipe: its bytes go through and its end is Ctrl-D (the shell exits 0)', async () => {
    const id = await openSandbox();
    const stdin = new PassThrough();
    stdin.end('echo piped-$((2+3))\n');
    let text = '';
    const stdout = new PassThrough();
    stdout.on('data', (c: Buffer) => {
      text += c.toString('utf8');
    });
    const code = await runCli(['sandbox', 'shell', id], {
      stdin,
      stdout,
      stderr: new PassThrough(),
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    expect(code).toBe(0);
    expect(text).toContain('piped-5');
    expect((await everdict(['sandbox', 'close', id], env)).code).toBe(0);
  }, 120_000);

  it('a closed session refuses the ticket: exit 3, and the refusal on stderr', async () => {
    const id = await openSandbox();
    expect((await everdict(['sandbox', 'close', id], env)).code).toBe(0);
    const r = await everdict(['sandbox', 'shell', id], env);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/^refused 409 /m);
  }, 120_000);
  it("the demo's sandbox step: exec, then a terminal over the ticket flow that runs what it types", async () => {
    const stdout = new Sink();
    const ctx = makeContext(
      { url: cp.url, key: cp.apiKey },
      { stdout, stderr: new Sink(), stdin: new PassThrough(), env: { PATH: process.env.PATH ?? '' } },
    );
    const demo = new Demo(ctx);
    await demo.sandbox();
    expect(stdout.text).toMatch(/exec → exit 0: hello from/);
    expect(stdout.text).toMatch(/^ {3}terminal → exit 0: terminal-42$/m);
    expect(stdout.text).toMatch(/run_\w+ closed/);
    expect(demo.made).toHaveLength(1);
  }, 120_000);
});
