// Scaffolds made ahead (ready-pool.ts): a sandbox provisioned from one has a fresh, empty workspace of the
// sandbox user's, fresh cgroups carrying its own spec's limits and counting only its own commands; the
// process removes the scaffolds it still holds when it exits.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ProcessDriver } from '../src/process-driver.js';
import { layout, readRecord } from '../src/sandbox-state.js';
import { firstLine, makeDriver, requireBwrap, tempDir } from './helpers.js';

const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const limits = { memoryBytes: 96 * 1024 * 1024, pids: 48 };

async function recordOf(driver: ProcessDriver, id: string) {
  const record = await readRecord(layout(driver.config.stateDir), id);
  if (!record) throw new Error(`no label file for ${id}`);
  return record;
}

/** Waits until the driver's pool is full (the first provision started it). */
async function poolFilled(driver: ProcessDriver): Promise<void> {
  await (driver as unknown as { ready: { filled(): Promise<void> } }).ready.filled();
}

describe('scaffolds made ahead', () => {
  it('gives a sandbox a fresh empty workspace of the sandbox user and fresh cgroups with its own limits', async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 2 });
    const first = await driver.provision({ labels: { tenant: 't', runId: 'first', kind: 'command' } });
    const firstCgroups = (await recordOf(driver, first.id)).limits.paths;
    expect(firstCgroups.filter((p) => basename(p).startsWith('pool-'))).toEqual([]); // none ready yet
    // A busy loop well above a sandbox's own start-up CPU (bubblewrap's in-cgroup part, sh, cat, id: ≈ 20 ms
    // under the full suite's load), so the second's usage below cannot reach it unless it counted this one's.
    const burn = await driver.exec(first, ['sh', '-c', 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done']);
    expect(burn.exitCode).toBe(0);
    await poolFilled(driver);
    const workspaces = layout(driver.config.stateDir).workspaces;
    const ready = readdirSync(workspaces).filter((n) => n.startsWith('pool-'));

    const second = await driver.provision({
      labels: { tenant: 't', runId: 'second', kind: 'command' },
      limits,
    });
    const record = await recordOf(driver, second.id);
    // It took a scaffold, whose workspace was renamed to a name that says nothing (test/mountinfo.test.ts).
    expect(ready.filter((n) => !existsSync(join(workspaces, n)))).toHaveLength(1);
    expect(basename(record.workspace)).not.toMatch(/^pool-/);
    const st = statSync(record.workspace);
    expect(st.mode & 0o777).toBe(0o700);
    expect(readdirSync(record.workspace)).toEqual([]);
    if (process.getuid?.() === 0) expect([st.uid, st.gid]).toEqual([65534, 65534]);

    if (driver.describe().mechanism === 'cgroup-v1') {
      const dir = (c: string) => record.limits.paths.find((p) => p.includes(`/${c}/`))!;
      expect(Number(readFileSync(`${dir('memory')}/memory.limit_in_bytes`, 'utf8'))).toBe(limits.memoryBytes);
      expect(readFileSync(`${dir('pids')}/pids.max`, 'utf8').trim()).toBe(String(limits.pids));
      expect(readFileSync(`${dir('cpuacct')}/cpuacct.usage`, 'utf8').trim()).toBe('0');
      expect(readFileSync(`${dir('memory')}/memory.max_usage_in_bytes`, 'utf8').trim()).toBe('0');
    }
    // Its usage is its own: nothing of the first sandbox's busy loop, then its own command's.
    const before = await driver.usage(second);
    if (before.cpuTimeMs !== null) expect(before.cpuTimeMs).toBe(0);
    const r = await driver.exec(second, ['sh', '-c', 'echo hi > note && cat note && id -u']);
    expect(r.exitCode).toBe(0);
    const after = await driver.usage(second);
    if (after.cpuTimeMs !== null) {
      expect(after.cpuTimeMs).toBeGreaterThan(0);
      expect(after.cpuTimeMs).toBeLessThan((await driver.usage(first)).cpuTimeMs!);
    }

    await driver.dispose(second);
    expect(existsSync(record.workspace)).toBe(false);
    for (const p of record.limits.paths) expect(existsSync(p), p).toBe(false);
  });

  it("of a process killed with -9 lose their cgroups on the next driver's first provision; taken ones stay", async () => {
    requireBwrap();
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const stateDir = join(tempDir(), 'state');
    const script = `
      const { ProcessDriver } = await import(${JSON.stringify(dist)});
      const driver = new ProcessDriver({ stateDir: ${JSON.stringify(stateDir)}, readyPool: 2 });
      await driver.provision({ labels: { tenant: 't', runId: 'own', kind: 'command' } });
      await driver.ready.filled();
      const taken = await driver.provision({ labels: { tenant: 't', runId: 'taken', kind: 'command' } });
      await driver.ready.filled();
      console.log(JSON.stringify({ pid: process.pid, taken: taken.id }));
      setInterval(() => {}, 1 << 30);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await firstLine(child);
    const { pid, taken } = JSON.parse(line) as { pid: number; taken: string };
    const holder = makeDriver({ stateDir });
    const takenRecord = await recordOf(holder, taken);
    expect(basename(takenRecord.workspace)).not.toMatch(/^pool-/); // renamed when taken
    if (holder.describe().mechanism === 'rlimit') {
      child.kill('SIGKILL');
      return;
    }
    expect(basename(takenRecord.limits.paths[0]!)).toMatch(/^pool-/); // a scaffold's cgroups keep its name
    const parent = dirname(takenRecord.limits.paths[0]!);
    const scaffolds = () => readdirSync(parent).filter((n) => n.startsWith(`pool-${pid}-`));
    expect(scaffolds()).toHaveLength(3); // two ready, one taken
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;

    const next = makeDriver({ readyPool: 1 }); // another state directory: the host's cgroups are swept
    await next.provision({ labels: { tenant: 't', runId: 'next', kind: 'command' } });
    await expect
      .poll(() => scaffolds(), { timeout: 10_000 })
      .toEqual([basename(takenRecord.limits.paths[0]!)]);
    for (const p of takenRecord.limits.paths) expect(existsSync(p), p).toBe(true);
    await holder.dispose(takenRecord.handle); // adopted and removed
    for (const p of takenRecord.limits.paths) expect(existsSync(p), p).toBe(false);
  });

  it('are removed when the process exits', () => {
    requireBwrap();
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const stateDir = join(tempDir(), 'state');
    const script = `
      const { ProcessDriver } = await import(${JSON.stringify(dist)});
      const driver = new ProcessDriver({ stateDir: ${JSON.stringify(stateDir)}, readyPool: 3 });
      const h = await driver.provision({ labels: { tenant: 't', runId: 'x', kind: 'command' } });
      await driver.dispose(h);
      await driver.ready.filled();
      const { readdirSync } = await import('node:fs');
      console.log(JSON.stringify({ pid: process.pid, ready: readdirSync(${JSON.stringify(join(stateDir, 'workspaces'))}) }));
    `;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const { pid, ready } = JSON.parse(out.stdout) as { pid: number; ready: string[] };
    expect(ready).toHaveLength(3); // made while it ran…
    expect(readdirSync(join(stateDir, 'workspaces'))).toEqual([]); // …and gone with it
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    if (/ - cgroup cgroup \S*memory/.test(mounts)) {
      const parent = '/sys/fs/cgroup/memory/everdict';
      expect(readdirSync(parent).filter((n) => n.startsWith(`pool-${pid}-`))).toEqual([]);
    }
  });
});
