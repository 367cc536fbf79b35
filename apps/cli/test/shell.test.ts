// `everdict sandbox shell` through a REAL pty: util-linux `script -qec` gives the built CLI
// (`dist/main.js`) a terminal, against the built control plane (a child process on embedded PGlite) with
// the embedded session placement (`EVERDICT_SESSIONS=process`: a real bubblewrap sandbox). What goes into
// the pty reaches the remote shell raw; the local terminal's size is the remote pty's, and a resize of it
// (SIGWINCH) follows; the remote `exit 3` is the CLI's exit code 3. Then, in-process: stdin that is a pipe
// ends as Ctrl-D, a refused ticket is exit 3, and the demo's sandbox step opens a terminal too.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Demo } from '../src/commands/demo.js';
import { makeContext } from '../src/context.js';
import { runCli } from '../src/program.js';
import { everdict, Sink } from './capture.js';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const SCRIPT = '/usr/bin/script';

let cp: ControlPlaneProcess;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  // Never skipped: without util-linux `script` (Debian bsdutils) or the built CLI this suite fails.
  if (!existsSync(SCRIPT)) throw new Error(`no ${SCRIPT}: apt-get install bsdutils (util-linux script)`);
  if (!existsSync(CLI)) throw new Error(`no ${CLI}: pnpm --filter @everdict/cli build`);
  dir = mkdtempSync(join(tmpdir(), 'cli-shell-'));
  cp = await startControlPlane({ env: { EVERDICT_SESSIONS: 'process' } });
  env = { EVERDICT_URL: cp.url, EVERDICT_API_KEY: cp.apiKey };
}, 300_000);
afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openSandbox(): Promise<string> {
  const open = await everdict(['sandbox', 'open', '--ttl', '600', '--idle', '600', '--json'], env);
  expect(open.code, open.err).toBe(0);
  return (JSON.parse(open.out) as { run: { id: string } }).run.id;
}

/** Waits until `check()` holds, or fails with what the pty printed so far. */
async function until(what: string, check: () => boolean, out: () => string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the pty printed:\n${out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('sandbox shell through a real pty (script -qec)', () => {
  it('raw keys reach the remote shell, the size and its change follow, `exit 3` exits 3', async () => {
    const id = await openSandbox();
    const token = randomBytes(6).toString('hex');
    const go = join(dir, `resize-${token}`);
    // Inside the pty: set its size, then (in the background, once the test says so) change it — the kernel
    // sends the foreground CLI SIGWINCH — and exec the CLI in the foreground.
    const inside = [
      'stty cols 100 rows 30',
      `(for i in $(seq 1200); do [ -e '${go}' ] && break; sleep 0.1; done; stty cols 120 rows 40 </dev/tty) &`,
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
        120_000,
      );
      expect(out).toContain('30 100'); // the local pty's size at connect is the remote pty's
      // Raw mode: Ctrl-C is a byte for the remote shell (it interrupts the remote sleep), not a SIGINT for
      // the CLI — in cooked mode the sleep would run on and `int-7` would not come for ten minutes.
      type('sleep 600; echo not-$((1+1))\n');
      await until(
        'the remote sleep',
        () => out.includes('sleep 600'),
        () => out,
      );
      type('\x03');
      type('echo int-$((3+4))\n');
      await until(
        'the interrupted shell',
        () => out.includes('int-7'),
        () => out,
      );
      expect(out).not.toContain('not-2');
      writeFileSync(go, '');
      // Resized locally (SIGWINCH → {"type":"resize"}): ask the remote pty until it reports the new size.
      const deadline = Date.now() + 60_000;
      while (!out.includes('40 120')) {
        if (Date.now() > deadline) throw new Error(`the resize never reached the remote pty:\n${out}`);
        type('stty size\n');
        await new Promise((r) => setTimeout(r, 500));
      }
      type(`echo hello-${token}-$((40+2)); exit 3\n`);
      expect(await exited).toBe(3);
      expect(out).toContain(`hello-${token}-42`);
    } finally {
      writeFileSync(go, '');
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // The session outlives its terminal.
    const exec = await everdict(['sandbox', 'exec', id, '--', 'sh', '-c', 'echo still-$((1+1))'], env);
    expect(exec.code, exec.err).toBe(0);
    expect(exec.out).toContain('still-2');
    expect((await everdict(['sandbox', 'close', id], env)).code).toBe(0);
  }, 240_000);

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
