// `everdict start` interrupted before its control plane is healthy, from the built CLI: one Ctrl-C stops the
// control plane it spawned and exits 130 at once (it waited for health, up to 240 s); a second Ctrl-C exits
// at once and still leaves no process behind (it exited with its children running). The control plane here is
// a stand-in (EVERDICT_CONTROL_PLANE_MAIN): a real process that listens, never answers, ignores SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { processesRunning } from './procs.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'everdict-start-int-'));
const HUNG = path.join(dir, 'hung-control-plane.mjs');
const TERMED = path.join(dir, 'termed');
writeFileSync(
  HUNG,
  "import http from 'node:http'; import { appendFileSync } from 'node:fs';\n" +
    `process.on('SIGTERM', () => appendFileSync(${JSON.stringify(TERMED)}, 'x'));\n` +
    "http.createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');\n",
);
const termed = () => {
  try {
    return readFileSync(TERMED, 'utf8').length;
  } catch {
    return 0;
  }
};
const leaked: number[] = [];
afterAll(() => {
  for (const pid of leaked)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  rmSync(dir, { recursive: true, force: true });
});

const running = (file: string) => processesRunning(file);

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function startHung(tag: string): Promise<{ child: ChildProcess; exit: Promise<number | null> }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [MAIN, 'start', '--port', String(port), '--data-dir', path.join(dir, tag)],
    {
      env: { PATH: process.env.PATH ?? '', EVERDICT_CONTROL_PLANE_MAIN: HUNG },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Started and waiting for health: the CLI said so, and the stand-in listens (its SIGTERM handler is set).
  await until(() => err.includes('control plane: starting'), 'the start');
  await until(() => listening(port), 'the stand-in');
  return { child, exit };
}

describe('everdict start, interrupted while the control plane starts', () => {
  it('one Ctrl-C: stops the control plane it spawned and exits 130, not after the health deadline', async () => {
    const { child, exit } = await startHung('once');
    const t0 = performance.now();
    child.kill('SIGINT');
    const code = await exit;
    leaked.push(...running(HUNG));
    expect(code).toBe(130);
    // The stand-in ignores SIGTERM: stopped by the supervisor's SIGKILL after its 15 s grace, far below the
    // 240 s health deadline it waited for before.
    expect(termed()).toBeGreaterThan(0);
    expect(performance.now() - t0).toBeLessThan(60_000);
    expect(running(HUNG)).toEqual([]);
  }, 120_000);

  it('a second Ctrl-C exits at once and still leaves no child running', async () => {
    const { child, exit } = await startHung('twice');
    const before = termed();
    child.kill('SIGINT');
    // The first one is at work: the stand-in got its SIGTERM (and ignores it). Then the second.
    await until(() => termed() > before, 'the first stop');
    child.kill('SIGINT');
    const t0 = performance.now();
    const code = await exit;
    leaked.push(...running(HUNG));
    expect(code).toBe(130);
    expect(performance.now() - t0).toBeLessThan(10_000); // not the 15 s grace
    expect(running(HUNG)).toEqual([]);
  }, 120_000);
});
