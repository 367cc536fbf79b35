// A command's CPU time is read only once its processes have left the sandbox's cgroups. After a command
// that exits normally, bubblewrap reports its exit as soon as the namespace init saw the command end; what
// the command left behind in its pid namespace (a background process) is killed only then, by the init's
// exit, and its exit — freeing its memory — is CPU time the sandbox's cgroups are charged for after the
// exit was reported. Before, the usage read at the command's end (and `usage()` right after it) missed it:
// read again a moment later, the same sandbox had used more CPU with no command running.
import fs, { readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { finished } from '../src/limits/cgroup-fs.js';
import { layout, readRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

// A background process that holds ~300 MB (its exit frees them: CPU time charged to the sandbox) and spins,
// started and ready before the command itself exits 0.
const leaveBehind = [
  'sh',
  '-c',
  `node -e "globalThis.b = Buffer.alloc(3e8, 1); require('fs').writeFileSync('/workspace/ready', ''); for (;;);" \
     >/dev/null 2>&1 </dev/null &
   until [ -e /workspace/ready ]; do sleep 0.01; done; exit 0`,
];

beforeAll(() => {
  requireBwrap();
});

/** Every task in the sandbox's cgroups (read afresh: a held descriptor may answer a stale list). */
function tasksIn(paths: readonly string[]): string[] {
  return paths.flatMap((dir) =>
    readFileSync(`${dir}/tasks`, 'utf8')
      .split('\n')
      .filter((t) => t !== ''),
  );
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await sleep(5);
  }
}

const driver = makeDriver();

describe("a command's final CPU time", () => {
  for (const spawner of ['process', 'inline'] as const) {
    it(`is read once what it left behind has left the cgroups (${spawner})`, async () => {
      const d = spawner === 'process' ? driver : makeDriver({ spawner });
      const h = await d.provision({
        labels: { tenant: 'cpu', runId: `settle-${spawner}`, kind: 'sandbox' },
        limits: { cpuTimeMs: 600_000, memoryBytes: 1024 * 1024 * 1024 },
      });
      const paths = (await readRecord(layout(d.config.stateDir), h.id))!.limits.paths;
      const r = await d.exec(h, leaveBehind, { timeoutMs: 30_000 });
      expect(r.exitCode).toBe(0);
      // under cpuTimeMs the command's end reads the usage: only once nothing is left in the cgroups
      expect(tasksIn(paths)).toEqual([]);
      const first = (await d.usage(h)).cpuTimeMs;
      await until(() => tasksIn(paths).length === 0);
      const settled = (await d.usage(h)).cpuTimeMs;
      expect(settled).toBe(first);
      await d.dispose(h);
    }, 60_000);
  }

  it('after a command that left nothing, usage and snapshot list one cgroup once each (v1: cpuacct)', async () => {
    const d = makeDriver({ readyPool: 0 });
    const h = await d.provision({ labels: { tenant: 'cpu', runId: 'settle-cheap', kind: 'command' } });
    const box = await d.sandbox(h);
    if (box.limits.mechanism !== 'cgroup-v1') return await d.dispose(h); // v2 waits on cgroup.events
    expect((await d.exec(h, ['true'])).exitCode).toBe(0);
    expect(box.ending.size).toBe(1); // its namespace init: what the settle waits for
    // under load the init may still be on its way out; the count below is of a settle that finds it gone
    // at its first look (one listing), so wait for that here, with reads of our own made before the count
    const cpuacct = box.record.limits.paths.find((p) => p.includes('/cpuacct'))!;
    const [init] = [...box.ending];
    await until(() => tasksIn([cpuacct]).length === 0 && finished(init!));
    // every file the driver reads synchronously meanwhile (its named import sees the wrapper once synced)
    const reads: string[] = [];
    const original = fs.readFileSync;
    fs.readFileSync = ((path: fs.PathOrFileDescriptor, options?: unknown) => {
      reads.push(String(path));
      return (original as (p: fs.PathOrFileDescriptor, o?: unknown) => string | Buffer)(path, options);
    }) as typeof fs.readFileSync;
    syncBuiltinESMExports();
    let usage: Awaited<ReturnType<typeof d.usage>>;
    try {
      usage = await d.usage(h);
      await d.snapshot(h); // (the runner's next step: is anything still running?)
    } finally {
      fs.readFileSync = original;
      syncBuiltinESMExports();
    }
    expect(usage.cpuTimeMs).toBeGreaterThan(0);
    expect(box.ending.size).toBe(0); // settled: the init is let go
    // the kernel builds a pid list for each `tasks` read: the cpuacct cgroup's alone, where the CPU time is
    // charged and every task of the sandbox is (before: memory, pids and cpuacct — six lists for the two)
    expect(reads.filter((p) => p.endsWith('/tasks'))).toEqual([`${cpuacct}/tasks`, `${cpuacct}/tasks`]);
    await d.dispose(h);
  });
});
