// The spawner (src/spawner/): bubblewrap started by a small long-lived process, its pipes handed back to
// the driver. Commands get their stdin, stdout and stderr (large output with back-pressure), are limited
// (held until they joined the cgroups), stop on the budget; a spawner that dies fails the commands it
// held with spawn_failed — no hang — and the next command starts a new one. `inline` still works.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { layout, listRecords } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

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

describe('spawner: process', () => {
  const driver = makeDriver({ spawner: 'process' });

  it('runs commands from a process of its own, with stdin, stdout and stderr', async () => {
    const h = await driver.provision({ labels: labels() });
    const r = await driver.exec(h, sh('cat; echo err >&2; exit 3'), { stdin: 'piped-in' });
    expect([r.exitCode, utf8(r.stdout), utf8(r.stderr)]).toEqual([3, 'piped-in', 'err\n']);
    const spawner = driver.spawner!.pid!;
    expect(spawner).not.toBe(process.pid);
    expect(parentOf(spawner)).toBe(process.pid);
    // The sandbox's bubblewrap is the spawner's child, not this process's.
    const s = await driver.stream(h, ['sleep', '30']);
    const bwrap = Number(
      readFileSync(`/proc/${spawner}/task/${spawner}/children`, 'utf8').trim().split(' ')[0],
    );
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
