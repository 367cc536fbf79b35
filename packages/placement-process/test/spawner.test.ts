// The spawner (src/spawner/): bubblewrap started by a small long-lived process, its pipes handed back to
// the driver. Commands get their stdin, stdout and stderr (large output with back-pressure), are limited
// (held until they joined the cgroups), stop on the budget; a spawner that dies fails the commands it
// held with spawn_failed — no hang — and the next command starts a new one. `inline` still works.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { layout, listRecords } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const sh = (script: string) => ['sh', '-c', script];
let seq = 0;
const labels = () => ({ tenant: 'spawner', runId: `sp-${++seq}`, kind: 'sandbox' });

beforeAll(() => {
  requireBwrap();
});

/** The parent pid of a process (from /proc/<pid>/stat). */
const parentOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};

/** The children of a process, waited for (bounded) until there are at least `count`. */
async function childrenOf(pid: number, count: number): Promise<number[]> {
  const read = () =>
    readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
  for (let i = 0; i < 1000 && read().length < count; i++) await new Promise((r) => setTimeout(r, 10));
  return read();
}

describe('spawner: process', () => {
  const driver = makeDriver({ spawner: 'process' });

  it('runs commands from a process of its own, with stdin, stdout and stderr', async () => {
    const h = await driver.provision({ labels: labels() });
    const r = await driver.exec(h, sh('cat; echo err >&2; exit 3'), { stdin: 'piped-in' });
    expect([r.exitCode, utf8(r.stdout), utf8(r.stderr)]).toEqual([3, 'piped-in', 'err\n']);
    const spawner = driver.spawner!.pid!;
    expect(spawner).not.toBe(process.pid);
    expect(parentOf(spawner)).toBe(process.pid);
    // The sandbox's bubblewrap is the spawner's child, not this process's. (A stream without a terminal
    // starts its command a turn after it is answered, run-commands.ts: waited for here.)
    const s = await driver.stream(h, ['sleep', '30']);
    const bwrap = (await childrenOf(spawner, 1))[0]!;
    expect(parentOf(bwrap)).toBe(spawner);
    s.kill();
    await expect(s.exit).resolves.toMatchObject({ signal: 'SIGKILL' });
    await driver.dispose(h);
  });

  it('warms the cgroup lock without moving itself, and its warm descriptor never reaches a sandbox', async () => {
    const h = await driver.provision({ labels: labels() });
    await driver.exec(h, ['true']);
    const spawner = driver.spawner!.pid!;
    const before = readFileSync(`/proc/${spawner}/cgroup`, 'utf8');
    await new Promise((r) => setTimeout(r, 20)); // past the warm window: the next command warms
    const r = await driver.exec(h, sh('for f in /proc/self/fd/*; do readlink "$f"; done'));
    expect(utf8(r.stdout)).toContain('socket:'); // the listing works: stdio are sockets
    expect(utf8(r.stdout)).not.toContain('cgroup');
    expect(readFileSync(`/proc/${spawner}/cgroup`, 'utf8')).toBe(before);
    if (driver.describe().mechanism !== 'rlimit') {
      // the warm write goes through a descriptor the spawner keeps open on its own cgroup.procs
      const fds = readdirSync(`/proc/${spawner}/fd`).map((fd) => {
        try {
          return readlinkSync(`/proc/${spawner}/fd/${fd}`);
        } catch {
          return '';
        }
      });
      expect(fds.some((target) => target.endsWith('/cgroup.procs'))).toBe(true);
      expect((await driver.usage(h)).cpuTimeMs).toBeGreaterThan(0); // the commands joined as before
    }
    await driver.dispose(h);
  });

  it('streams 32 MiB with back-pressure and counts it in the cgroups', async () => {
    const h = await driver.provision({ labels: labels() });
    const s = await driver.stream(h, sh('head -c 33554432 /dev/zero'));
    s.stdin.end();
    let bytes = 0;
    s.stdout.pause();
    await new Promise((r) => setTimeout(r, 200)); // a reader that is late: the writer waits
    for await (const chunk of s.stdout) bytes += (chunk as Buffer).length;
    await expect(s.exit).resolves.toEqual({ exitCode: 0, signal: null });
    expect(bytes).toBe(33554432);
    const usage = await driver.usage(h);
    if (usage.mechanism !== 'rlimit') expect(usage.cpuTimeMs).toBeGreaterThan(0);
    await driver.dispose(h);
  });

  it('stops a command at its timeout', async () => {
    const h = await driver.provision({ labels: labels() });
    await refusal(driver.exec(h, ['sleep', '30'], { timeoutMs: 300 }), 'timeout');
    await driver.dispose(h);
  });

  it('fails the commands of a spawner that died with spawn_failed, and starts a new one', async () => {
    const h = await driver.provision({ labels: labels() });
    await driver.exec(h, ['true']);
    const first = driver.spawner!.pid!;
    const running = driver.exec(h, ['sleep', '30'], { timeoutMs: 60_000 });
    const s = await driver.stream(h, ['sleep', '30']);
    // Both commands reached this spawner before it dies: the exec starts after a read of the counters and
    // the stream a turn after it was answered, and one started after the death rightly goes to a new
    // spawner (and would run its 30 s). Each is a child of the spawner once it was started.
    await childrenOf(first, 2);
    driver.spawner!.stop();
    await refusal(running, 'spawn_failed');
    await expect(s.exit).rejects.toMatchObject({ code: 'spawn_failed' });
    const r = await driver.exec(h, sh('echo again'));
    expect(utf8(r.stdout)).toBe('again\n');
    expect(driver.spawner!.pid).not.toBe(first);
    const usage = await driver.usage(h);
    await driver.dispose(h);
    // Nothing of the lost commands outlives dispose (their cgroups were emptied and removed).
    if (usage.mechanism !== 'rlimit') {
      const record = (await listRecords(layout(driver.config.stateDir))).find((x) => x.handle.id === h.id);
      expect(record).toBeUndefined();
    }
  }, 30_000);
});

describe('spawner: inline', () => {
  const driver = makeDriver({ spawner: 'inline' });

  it('runs commands with child_process.spawn from this process', async () => {
    expect(driver.spawner).toBeNull();
    const h = await driver.provision({ labels: labels() });
    const r = await driver.exec(h, sh('cat; echo err >&2'), { stdin: 'x' });
    expect([r.exitCode, utf8(r.stdout), utf8(r.stderr)]).toEqual([0, 'x', 'err\n']);
    await driver.dispose(h);
  });
});

describe('spawner: inherited descriptors', () => {
  it('hands a sandbox none of the descriptors its driver process inherited (bubblewrap closes none)', async () => {
    // A process (the built driver, as a runner would run it) that inherited fd 251 without close-on-exec from
    // the shell that started it, the way a shell or a supervisor hands a daemon its descriptors. (Node marks
    // fds 0–15, and the ones above up to the first gap, close-on-exec at start — libuv's
    // uv_disable_stdio_inheritance — so a high one past a gap is what stays inheritable.)
    const dir = tempDir();
    const marker = join(dir, 'inherited-marker');
    writeFileSync(marker, 'not for sandboxes');
    const script = `
      import { readFileSync, readlinkSync } from 'node:fs';
      import { join } from 'node:path';
      import { ProcessDriver } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const driver = new ProcessDriver({ stateDir: join(process.argv[1], 'state'), imagesDir: join(process.argv[1], 'images'), spawner: 'process' });
      const h = await driver.provision({ labels: { tenant: 'spawner', runId: 'inherit', kind: 'sandbox' } });
      const r = await driver.exec(h, ['sh', '-c', 'for f in /proc/$$/fd/*; do readlink "$f"; done']);
      await driver.dispose(h);
      driver.drainReadyPool();
      const flags = /flags:\\s*([0-7]+)/.exec(readFileSync('/proc/self/fdinfo/251', 'utf8'))[1];
      process.stdout.write(JSON.stringify({ own: readlinkSync('/proc/self/fd/251'), flags, sandbox: new TextDecoder().decode(r.stdout) }));
    `;
    // Waited for without a wall-clock bound (the test's timeout is the net): a spawnSync `timeout` SIGTERMed
    // the process on a loaded machine before it printed, and the test parsed its empty stdout.
    const child = spawn(
      'bash',
      [
        '-c',
        'exec 251<"$1"; exec "$2" --input-type=module -e "$3" "$4"',
        'bash',
        marker,
        process.execPath,
        script,
        dir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const [status, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      child.once('close', (code, sig) => resolve([code, sig])),
    );
    expect({ status, signal, stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    const out = JSON.parse(stdout) as { own: string; flags: string; sandbox: string };
    // The driver's process holds it, inheritable (no O_CLOEXEC): what every fork of it would pass on.
    expect([out.own, Number.parseInt(out.flags, 8) & 0o2000000]).toEqual([marker, 0]);
    expect(out.sandbox).toContain('socket:'); // the listing ran (stdio are sockets)
    expect(out.sandbox).not.toContain('inherited-marker');
  });
});
