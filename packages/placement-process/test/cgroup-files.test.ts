// A sandbox's cgroup counter files read again and again (counters at each command's start, end and poll;
// usage) are held open from the first read to the sandbox's removal and read with one pread each
// (cgroup-fs.ts `CgroupFile`), and each read is the kernel's text of that moment. No descriptor outlives
// the sandbox, and a read after its cgroup went answers as a fresh open would (ENOENT). Task listings are
// not held: a held v1 `tasks` answers the pid list of up to a second ago.
import fs, {
  existsSync,
  mkdirSync,
  type PathLike,
  type RmDirOptions,
  readdirSync,
  readlinkSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CgroupFile } from '../src/limits/cgroup-fs.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

/** The paths this process holds open under `prefix`. */
function openUnder(prefix: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(prefix)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

describe('cgroup files', () => {
  it("reads the file's text of the moment each time, however long", () => {
    const dir = tempDir('everdict-pd-cgfile-');
    const path = join(dir, 'tasks');
    writeFileSync(path, '1\n');
    const file = new CgroupFile(path);
    expect(file.read()).toBe('1\n');
    const long = `${Array.from({ length: 3000 }, (_, i) => i).join('\n')}\n`; // > 4 KiB
    writeFileSync(path, long);
    expect(file.read()).toBe(long);
    writeFileSync(path, '7\n');
    expect(file.read()).toBe('7\n');
    file.close();
    expect(new CgroupFile(join(dir, 'gone')).readOr()).toBe('');
  });

  it('a removed cgroup reads as a missing file, not as its last text', () => {
    const parent = '/sys/fs/cgroup/pids';
    let dir: string;
    try {
      dir = join(parent, `everdict-cgfile-${process.pid}`);
      mkdirSync(dir);
    } catch {
      return; // no writable v1 pids hierarchy here (the driver test below covers the mechanism in force)
    }
    const file = new CgroupFile(join(dir, 'pids.max'));
    expect(file.read().trim()).toBe('max');
    writeFileSync(join(dir, 'pids.max'), '5');
    expect(file.read().trim()).toBe('5');
    rmdirSync(dir); // with the descriptor open
    expect(() => file.read()).toThrow(/ENOENT/);
    expect(file.readOr()).toBe('');
    file.close();
  });

  it("holds a sandbox's counter files open across its commands, and closes them at dispose", async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const mechanism = driver.describe().mechanism;
    const h = await driver.provision({ labels: { tenant: 'cgfile', runId: 'a', kind: 'command' } });
    const record = await driver.sandbox(h);
    const dirs = record.record.limits.paths;
    const held = () => dirs.flatMap((d) => openUnder(`${d}/`)).sort();
    expect(held()).toEqual([]); // nothing read yet
    expect((await driver.exec(h, ['true'])).exitCode).toBe(0);
    const usage = await driver.usage(h);
    await driver.snapshot(h);
    if (mechanism === 'rlimit') {
      expect(held()).toEqual([]);
    } else {
      expect(usage.cpuTimeMs).not.toBeNull();
      const first = held();
      const want =
        mechanism === 'cgroup-v1'
          ? ['memory.oom_control', 'pids.events', 'cpuacct.usage', 'memory.max_usage_in_bytes']
          : ['memory.events', 'pids.events', 'cpu.stat'];
      for (const name of want) expect(first.some((p) => p.endsWith(`/${name}`))).toBe(true);
      expect(first.filter((p) => /\/(tasks|cgroup\.threads|cgroup\.procs)$/.test(p))).toEqual([]);
      // a second command and usage read through the same descriptors: none opened anew
      expect((await driver.exec(h, ['true'])).exitCode).toBe(0);
      await driver.usage(h);
      expect(held()).toEqual(first);
    }
    await driver.dispose(h);
    expect(held()).toEqual([]);
  });

  it('sees a command started right after a listing that found none (task lists are read afresh)', async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const h = await driver.provision({ labels: { tenant: 'cgfile', runId: 'b', kind: 'command' } });
    const box = await driver.sandbox(h);
    for (let round = 0; round < 3; round++) {
      expect(await box.limits.active()).toBe(false); // nothing runs: the kernel builds an empty list
      const s = await driver.stream(h, ['sh', '-c', 'echo up; read line']);
      await new Promise((resolve) => s.stdout.once('data', resolve));
      // well within the second the kernel keeps that list: a held descriptor would answer it again
      expect(await box.limits.active()).toBe(true);
      expect((await box.limits.processes()).length).toBeGreaterThan(0);
      s.stdin.end('go\n');
      await s.exit;
      for (let i = 0; i < 100 && (await box.limits.active()); i++)
        await new Promise((r) => setTimeout(r, 10));
    }
    await driver.dispose(h);
  });

  it("dispose removes a sandbox's cgroups and directories off the driver's thread (no rmdirSync)", async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const h = await driver.provision({
      labels: { tenant: 'cgfile', runId: 'c', kind: 'command' },
      directories: ['out'],
    });
    expect((await driver.exec(h, ['true'])).exitCode).toBe(0);
    const { record } = await driver.sandbox(h);
    const dirs = record.limits.paths;
    // every rmdir of this process noted, synchronous or not: the driver's named imports of node:fs and
    // node:fs/promises see the wrappers once the builtins' ESM exports are synced with the patched objects
    const synchronous: string[] = [];
    const pooled: string[] = [];
    const original = fs.rmdirSync;
    const originalPooled = fsp.rmdir;
    fs.rmdirSync = (path: PathLike, options?: RmDirOptions) => {
      synchronous.push(String(path));
      original(path, options);
    };
    fsp.rmdir = (path: PathLike, options?: RmDirOptions) => {
      pooled.push(String(path));
      return originalPooled(path, options);
    };
    syncBuiltinESMExports();
    try {
      await driver.dispose(h);
    } finally {
      fs.rmdirSync = original;
      fsp.rmdir = originalPooled;
      syncBuiltinESMExports();
    }
    for (const dir of [...dirs, record.workspace]) expect(existsSync(dir)).toBe(false);
    // A cgroup's rmdir waits in the kernel (cgroup_mutex, the memory cgroup's offlining), and so does a
    // just-ended sandbox's directory (still a mount point in its dying mount namespace): all go to the thread
    // pool, none stops the driver's thread.
    expect(synchronous).toEqual([]);
    expect(pooled).toEqual(
      expect.arrayContaining([...dirs, join(record.workspace, 'out'), record.workspace]),
    );
  });
});
