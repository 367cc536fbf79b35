// The native spawner (native/spawner.c, built by native.ts): the default where a C compiler is,
// built once into the state directory and reused, a small process; without a compiler the Node spawner
// runs instead. Every test here names its program (both, where both apply); the behaviour suites (spawner,
// pty, isolation, limits, …) run on whichever program is the default, and CI runs them again with
// EVERDICT_PLACEMENT_SPAWNER_PROGRAM=node (.ci/run).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Spawner } from '../src/spawner/client.js';
import { nativeSpawnerPath } from '../src/spawner/native.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

let seq = 0;
const labels = () => ({ tenant: 'native', runId: `n-${++seq}`, kind: 'sandbox' });
const hasCompiler = spawnSync('cc', ['--version'], { stdio: 'ignore' }).status === 0;
const savedCC = process.env.CC;

beforeAll(() => {
  requireBwrap();
});
afterEach(() => {
  if (savedCC === undefined) delete process.env.CC;
  else process.env.CC = savedCC;
});

describe('native spawner', () => {
  it('is the default where cc is: built into <stateDir>/bin, a process of ≈ 1–2 MB', async () => {
    const driver = makeDriver({ spawnerProgram: 'auto' }); // (the default, unless the environment says node)
    const h = await driver.provision({ labels: labels() });
    const r = await driver.exec(h, ['sh', '-c', 'cat; echo err >&2; exit 4'], { stdin: 'in' });
    expect([r.exitCode, utf8(r.stdout), utf8(r.stderr)]).toEqual([4, 'in', 'err\n']);
    expect(driver.spawner!.program).toBe(hasCompiler ? 'native' : 'node');
    if (hasCompiler) {
      const pid = driver.spawner!.pid!;
      const built = nativeSpawnerPath(join(driver.config.stateDir, 'bin'));
      expect(readlinkSync(`/proc/${pid}/exe`)).toBe(built);
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      expect(rssKb).toBeLessThan(8 * 1024);
    }
    await driver.dispose(h);
  });

  it('is what the built package runs (dist/, where the source lies one level up from the bundle)', () => {
    // The bundle's modules sit in dist/, not dist/spawner/: a source path right for src/ alone made the built
    // driver fall back to the Node spawner silently while every test of src/ passed.
    const dir = tempDir();
    const script = `
      import { ProcessDriver } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const driver = new ProcessDriver({ stateDir: process.argv[1], spawnerProgram: 'auto' });
      const h = await driver.provision({ labels: { tenant: 'native', runId: 'dist', kind: 'sandbox' } });
      const r = await driver.exec(h, ['true']);
      await driver.dispose(h);
      driver.drainReadyPool();
      process.stdout.write(JSON.stringify({ exitCode: r.exitCode, program: driver.spawner.program }));
      process.exit(0);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ exitCode: 0, program: hasCompiler ? 'native' : 'node' });
  });

  it('rebuilds over a file at its path that others could have written, never running it', async () => {
    if (!hasCompiler) return;
    const driver = makeDriver({ spawnerProgram: 'auto' });
    const built = nativeSpawnerPath(join(driver.config.stateDir, 'bin'));
    const h = await driver.provision({ labels: labels() });
    await driver.exec(h, ['true']);
    driver.spawner!.stop();
    rmSync(built); // (it may still be running: ETXTBSY for a write in place)
    writeFileSync(built, '#!/bin/sh\nexit 3\n');
    chmodSync(built, 0o777);
    const other = makeDriver({ stateDir: driver.config.stateDir, spawnerProgram: 'auto' });
    const r = await other.exec(h, ['sh', '-c', 'echo ok']);
    expect(utf8(r.stdout)).toBe('ok\n');
    expect(other.spawner!.program).toBe('native');
    expect(statSync(built).mode & 0o022).toBe(0);
    expect(readFileSync(built).subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    await other.dispose(h);
  });

  it('falls back to the Node spawner when no compiler runs', async () => {
    process.env.CC = '/nonexistent/cc';
    const driver = makeDriver({ spawnerProgram: 'auto' });
    const h = await driver.provision({ labels: labels() });
    const r = await driver.exec(h, ['sh', '-c', 'echo fallback']);
    expect(utf8(r.stdout)).toBe('fallback\n');
    expect(driver.spawner!.program).toBe('node');
    expect(readlinkSync(`/proc/${driver.spawner!.pid}/exe`)).toBe(process.execPath);
    await driver.dispose(h);
  });

  it("keeps its own cgroups' cgroup.procs open for the move back out: opened once, not per command", async () => {
    if (!hasCompiler) return; // the native program only
    const driver = makeDriver({ spawnerProgram: 'auto', readyPool: 0 });
    if (driver.describe().mechanism === 'rlimit') return; // no join, no move out
    const held = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`).map((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          return '';
        }
      });
    const h1 = await driver.provision({ labels: labels() });
    expect((await driver.exec(h1, ['true'])).exitCode).toBe(0);
    if (driver.spawner!.program !== 'native') return await driver.dispose(h1); // EVERDICT_PLACEMENT_SPAWNER_PROGRAM=node
    const { leaveFiles } = (await driver.sandbox(h1)).limits;
    const pid = driver.spawner!.pid!;
    expect(leaveFiles.length).toBeGreaterThan(0);
    for (const file of leaveFiles) expect(held(pid)).toContain(file);
    // another sandbox's command moves bubblewrap back through the same descriptors: none opened anew
    const h2 = await driver.provision({ labels: labels() });
    const before = held(pid).filter((t) => t.endsWith('/cgroup.procs')).length;
    expect((await driver.exec(h2, ['true'])).exitCode).toBe(0);
    expect(held(pid).filter((t) => t.endsWith('/cgroup.procs')).length).toBe(before);
    await driver.dispose(h1);
    await driver.dispose(h2);
  });

  it("writes bubblewrap's options to fd 6 in one system call, not one per option", async () => {
    if (!hasCompiler) return; // the native program only
    const driver = makeDriver({ spawnerProgram: 'auto', readyPool: 0 });
    const h = await driver.provision({ labels: labels() });
    expect((await driver.exec(h, ['true'])).exitCode).toBe(0); // the spawner is up
    if (driver.spawner!.program !== 'native') return await driver.dispose(h); // EVERDICT_PLACEMENT_SPAWNER_PROGRAM=node
    // the spawner's main thread, traced (a real strace): the writes of the options hold their NULs
    const out = join(tempDir(), 'strace');
    const strace = spawn(
      'strace',
      ['-e', 'trace=write', '-s', '64', '-o', out, '-p', String(driver.spawner!.pid)],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let attached = '';
    await new Promise<void>((resolve, reject) => {
      strace.stderr!.on('data', (d: Buffer) => {
        attached += d.toString();
        if (attached.includes('attached')) resolve();
      });
      strace.once('exit', (code) => reject(new Error(`strace exited ${code}: ${attached}`)));
      strace.once('error', reject); // no strace here: the test needs it (as bubblewrap)
    });
    expect((await driver.exec(h, ['true'])).exitCode).toBe(0);
    const ended = new Promise((resolve) => strace.once('exit', resolve));
    strace.kill('SIGINT');
    await ended;
    const options = readFileSync(out, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('write(') && line.includes('--'));
    expect(options).toHaveLength(1); // before: one write per option (≈ 50)
    expect(options[0]).toMatch(/--unshare-user\\0/);
    await driver.dispose(h);
  });

  it.each(['auto', 'node'] as const)(
    'fails a request with a NUL byte, and runs the next (%s)',
    async (program) => {
      // The driver's schemas refuse NUL in argv before this; the native spawner's fields are NUL-separated,
      // so its client refuses one too rather than let it shift the fields.
      const spawner = new Spawner({ program, dir: join(tempDir(), 'bin') });
      const run = (args: string[]) =>
        new Promise<{ failed: string | null; exit: [number | null, string | null] }>((resolve) => {
          let failed: string | null = null;
          const pipes: Socket[] = [];
          spawner.start(
            {
              file: 'sh',
              args,
              env: { PATH: '/usr/bin:/bin' },
              user: null,
              join: null,
              leave: null,
              status: false,
              control: false,
              stdin: true,
              warm: null,
            },
            {
              pid: () => undefined,
              pipe: (_fd, socket) => {
                pipes.push(socket);
                socket.resume();
              },
              init: () => undefined,
              warning: () => undefined,
              failed: (message) => {
                failed = message;
              },
              exit: (code, signal) => {
                for (const p of pipes) p.destroy();
                resolve({ failed, exit: [code, signal] });
              },
              lost: () => resolve({ failed: 'lost', exit: [null, null] }),
            },
          );
        });
      const refused = await run(['-c', 'exit 0', 'a\0b']);
      expect(refused.failed).not.toBeNull();
      expect(refused.exit).toEqual([null, null]);
      expect(await run(['-c', 'exit 5'])).toEqual({ failed: null, exit: [5, null] });
      expect(await run(['-c', 'kill -TERM $$'])).toEqual({ failed: null, exit: [null, 'SIGTERM'] });
      spawner.stop();
    },
  );

  it.each(['auto', 'node'] as const)(
    'reports a missing bubblewrap as spawn_failed, with no process left (%s)',
    async (program) => {
      const driver = makeDriver({ bwrap: join(tempDir(), 'no-bwrap'), spawnerProgram: program });
      const h = await driver.provision({ labels: labels() });
      await refusal(driver.exec(h, ['true']), 'spawn_failed');
      await driver.dispose(h);
    },
  );
});

describe('spawner descriptors', () => {
  it.each(['auto', 'node'] as const)(
    "never blocks the driver's loop on a command that does not read its stdin (%s)",
    async (program) => {
      // The driver's ends of the sockets are non-blocking, as libuv leaves them: a blocking one would make
      // a write the command does not read stall the driver's whole event loop (and a read past what is there).
      const driver = makeDriver({ spawnerProgram: program });
      const h = await driver.provision({ labels: labels() });
      const s = await driver.stream(h, ['sleep', '3']);
      s.stdin.write(Buffer.alloc(8 << 20));
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 20));
      expect(performance.now() - t0).toBeLessThan(1500);
      s.kill();
      await expect(s.exit).resolves.toMatchObject({ signal: 'SIGKILL' });
      await driver.dispose(h);
    },
  );
});

describe('spawner stdin', () => {
  it.each(['auto', 'node'] as const)(
    'sends no stdin descriptor for a command given no input, which reads end-of-file (%s)',
    async (program) => {
      // An exec with no stdin (the common case) costs one IPC message, acknowledgement and socket fewer:
      // the spawner closes its end of fd 0 at once instead of handing it to the driver to end.
      const spawner = new Spawner({ program, dir: join(tempDir(), 'bin') });
      const run = (stdin: boolean) =>
        new Promise<{ fds: number[]; out: string; code: number | null }>((resolve) => {
          const fds: number[] = [];
          let out = '';
          const pipes: Socket[] = [];
          spawner.start(
            {
              file: 'sh',
              args: ['-c', 'if read -r x; then echo "got $x"; else echo eof; fi'],
              env: { PATH: '/usr/bin:/bin' },
              user: null,
              join: null,
              leave: null,
              status: false,
              control: false,
              stdin,
              warm: null,
            },
            {
              pid: () => undefined,
              pipe: (fd, socket) => {
                fds.push(fd);
                pipes.push(socket);
                if (fd === 0) socket.end('in\n');
                else
                  socket.on('data', (chunk: Buffer) => {
                    if (fd === 1) out += chunk;
                  });
              },
              init: () => undefined,
              warning: () => undefined,
              failed: () => undefined,
              exit: (code) => {
                setTimeout(() => {
                  for (const p of pipes) p.destroy();
                  resolve({ fds, out, code });
                }, 50);
              },
              lost: () => resolve({ fds, out: 'lost', code: null }),
            },
          );
        });
      expect(await run(false)).toEqual({ fds: [1, 2], out: 'eof\n', code: 0 });
      expect(await run(true)).toEqual({ fds: [0, 1, 2], out: 'got in\n', code: 0 });
      spawner.stop();
    },
  );

  it.each(['auto', 'node'] as const)(
    'runs an exec with no input and one with input (the driver asks for stdin only then) (%s)',
    async (program) => {
      const driver = makeDriver({ spawnerProgram: program });
      const h = await driver.provision({ labels: labels() });
      const none = await driver.exec(h, ['sh', '-c', 'cat; echo end']);
      expect(utf8(none.stdout)).toBe('end\n');
      const some = await driver.exec(h, ['sh', '-c', 'cat; echo end'], { stdin: 'x' });
      expect(utf8(some.stdout)).toBe('xend\n');
      await driver.dispose(h);
    },
  );
});
