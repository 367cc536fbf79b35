// `kill -9` of a process holding provisioned sandboxes, then `reap` from another process finds and
// removes every one: workspace directories, cgroups, logs and label files (the processes already died
// with their parent through --die-with-parent; the cgroups being removable proves it).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { layout, listRecords, ownerAlive } from '../src/sandbox-state.js';
import { firstLine, makeDriver, requireBwrap, tempDir } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/hold-sandboxes.mjs', import.meta.url));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function sleepers(marker: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0')[1] === marker;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('reap after a crash', () => {
  it('finds and removes every sandbox a kill -9ed host left behind', async () => {
    requireBwrap();
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const stateDir = join(tempDir(), 'state');
    const tenant = `crash-${process.pid}`;
    const child = spawn(process.execPath, [fixture, stateDir, tenant, '3'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const line = await firstLine(child);
    const { handles, marker } = JSON.parse(line) as { handles: Array<{ id: string }>; marker: string };
    expect(handles).toHaveLength(3);
    // The holder signals on the command's first output (`echo running`), a moment before `exec sleep`
    // replaces the shell: wait for the sleeper to show, not assert it at once (that raced ≈ 1 run in 6).
    await expect.poll(() => sleepers(marker).length, { timeout: 15_000 }).toBe(1);

    const reaper = makeDriver({ stateDir });
    const records = await listRecords(layout(stateDir));
    expect(records.map((r) => r.handle.id).sort()).toEqual(handles.map((h) => h.id).sort());
    expect(await reaper.reap({ labels: { tenant } })).toEqual([]); // the owner is alive: nothing is an orphan

    const cgroups = records.flatMap((r) => r.limits.paths);
    expect(cgroups.length).toBeGreaterThanOrEqual(9);
    for (const path of [
      ...cgroups,
      ...records.map((r) => r.workspace),
      records[0] && join(stateDir, 'logs'),
    ]) {
      expect(existsSync(path!), path).toBe(true);
    }
    expect(readdirSync(join(stateDir, 'logs')).length).toBeGreaterThan(0); // the running command's log
    // The holder's scaffolds made ahead (ready-pool.ts): no label file names them; a live owner's stay.
    const scaffolds = () =>
      readdirSync(join(stateDir, 'workspaces')).filter((n) => n.startsWith(`pool-${child.pid}-`));
    await expect.poll(() => scaffolds().length, { timeout: 15_000 }).toBeGreaterThan(0);
    const scaffoldCgroups = scaffolds().map((n) => join(dirname(cgroups[0]!), n));
    expect(scaffoldCgroups.every((p) => existsSync(p))).toBe(true);

    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(records.every((r) => !ownerAlive(r.owner))).toBe(true);

    const reaped = await reaper.reap({ labels: { tenant } });
    expect(reaped.map((r) => r.id).sort()).toEqual(handles.map((h) => h.id).sort());
    for (const r of reaped) {
      expect(r.labels.tenant).toBe(tenant);
      expect(r.removed).toEqual(
        expect.arrayContaining(['workspace', 'label', 'cgroup:memory', 'cgroup:pids', 'cgroup:cpuacct']),
      );
    }
    for (const path of [
      ...cgroups,
      ...scaffoldCgroups,
      ...records.map((r) => r.workspace),
      ...records.map((r) => r.log),
    ]) {
      expect(existsSync(path), path).toBe(false);
    }
    expect(readdirSync(join(stateDir, 'sandboxes'))).toEqual([]);
    expect(readdirSync(join(stateDir, 'workspaces'))).toEqual([]);
    expect(readdirSync(join(stateDir, 'logs'))).toEqual([]);
    expect(sleepers(marker)).toEqual([]);
    expect(await reaper.reap({ labels: { tenant } })).toEqual([]);
  }, 120_000);
});
