// Whether a sandbox still runs something (limits `active`, cgroup-fs.ts `anyActive`): a task that has begun
// to exit (PF_EXITING — here a zombie) no longer counts, a live one does, an unreadable listing does, and so
// does a task that shows up only in the second listing (forked while its parent exited). And the snapshot
// fast path holds right after a command ended — where the namespace's init is often still tearing its
// namespaces down in the cgroups — instead of starting a sandboxed tar for ≈ 1 run in 3.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { anyActive, exiting, threadsIn } from '../src/limits/cgroup-fs.js';
import { countingBwrap, makeDriver, requireBwrap, tempDir } from './helpers.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
};

/**
 * A live process and a zombie child of it, never reaped: perl forks a child that exits at once and then sleeps
 * without waiting (default SIGCHLD: nothing reaps it). Not `sh -c 'sleep 0 & …; exec sleep 60'`: under load
 * the background job can end before the `exec`, and dash reaps it then (its /proc entry gone: a flake).
 */
async function liveAndZombie(): Promise<{ live: number; zombie: number }> {
  const child = spawn(
    'perl',
    ['-e', '$| = 1; my $p = fork() // die; exit 0 unless $p; print "$p\\n"; sleep 60'],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  children.push(child);
  const zombie = await new Promise<number>((resolve) =>
    child.stdout.once('data', (b) => resolve(Number(String(b)))),
  );
  for (let i = 0; i < 500 && stateOf(zombie) !== 'Z'; i++) await sleep(2); // waits on the condition
  expect(stateOf(zombie)).toBe('Z');
  return { live: child.pid!, zombie };
}

describe('active: a task that has begun to exit does not count', () => {
  it('a zombie is exiting, a live process is not, a task that is gone is', async () => {
    const { live, zombie } = await liveAndZombie();
    expect(exiting(zombie)).toBe(true);
    expect(exiting(live)).toBe(false);
    expect(exiting(process.pid)).toBe(false);
    expect(exiting(2 ** 22 + 1)).toBe(true); // above any pid_max: no such task
    expect(anyActive(() => [])).toBe(false);
    expect(anyActive(() => [zombie])).toBe(false);
    expect(anyActive(() => [zombie, live])).toBe(true);
    expect(anyActive(() => null)).toBe(true); // the listing could not be read
    // Forked between the two listings: its parent is exiting by the time it is looked at.
    const listings = [[zombie], [zombie, live]];
    expect(anyActive(() => listings.shift() ?? null)).toBe(true);
    const unreadable = [[zombie], null];
    expect(
      anyActive(() => {
        const next = unreadable.shift();
        return next === undefined ? [] : next;
      }),
    ).toBe(true);
  });

  it('a listing: ids of every file; a removed cgroup lists nothing; a cgroup without the file is unknown', () => {
    const dir = tempDir('everdict-pd-listing-');
    writeFileSync(join(dir, 'tasks'), '12\n34\n');
    expect(threadsIn([join(dir, 'tasks'), join(dir, 'gone', 'tasks')])).toEqual([12, 34]);
    expect(threadsIn([join(dir, 'cgroup.threads')])).toBeNull(); // the cgroup is there, its listing is not
    expect(anyActive(() => threadsIn([join(dir, 'cgroup.threads')]))).toBe(true);
  });

  it('a running command is active; once it ended, nothing in the sandbox is', async () => {
    requireBwrap();
    const driver = makeDriver();
    const h = await driver.provision({ labels: { tenant: 'active', runId: 'a', kind: 'command' } });
    const box = await driver.sandbox(h);
    const s = await driver.stream(h, ['sh', '-c', 'echo up; read line']);
    await new Promise((resolve) => s.stdout.once('data', resolve));
    expect(await box.limits.active()).toBe(true);
    s.stdin.end('go\n');
    await s.exit;
    expect(await box.limits.active()).toBe(false);
    await driver.dispose(h);
  });

  it('a snapshot right after a command ended takes the fast path (no sandboxed tar)', async () => {
    requireBwrap();
    // bubblewrap through a wrapper that notes each start: the archiver's are the ones running tar.
    const counting = countingBwrap('everdict-pd-active-');
    const driver = makeDriver({ bwrap: counting.bwrap });
    const runs = 24;
    for (let i = 0; i < runs; i++) {
      const h = await driver.provision({ labels: { tenant: 'active', runId: `fast-${i}`, kind: 'command' } });
      // the runner's command run: `mkdir -p out` as a prologue of the command itself
      const s = await driver.stream(h, ['sh', '-c', 'mkdir -p out && exec "$@"', 'sh', 'true']);
      s.stdin.end();
      s.stdout.resume();
      s.stderr.resume();
      expect(await s.exit).toEqual({ exitCode: 0, signal: null });
      expect((await driver.snapshot(h)).bytes.length).toBeGreaterThan(0);
      await driver.dispose(h);
    }
    const starts = counting.starts();
    expect(starts.filter((l) => !/ tar -C /.test(l))).toHaveLength(runs);
    // Before, ≈ 1 snapshot in 3 found the init still listed and started the sandboxed tar (7–9 of 24).
    expect(starts.filter((l) => / tar -C /.test(l)).length).toBeLessThanOrEqual(1);
  });
});
