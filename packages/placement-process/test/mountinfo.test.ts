// What a command sees of the host's layout in /proc/self/mountinfo. The workspace's line names its host
// directory: a bind mount's root field is the source directory's path within its filesystem, which no
// bubblewrap option changes (README, "What the sandbox sees of the host"). So that name says nothing: before,
// it was the sandbox id (`pd-` and a hash of tenant and run, the same for every provision of the run), or a
// scaffold's `pool-<owner pid>-<owner start time>-<n>-<state tag>` (the driver's process, and how many
// sandboxes it had made: other tenants' too). Now a random name, a new one for each sandbox. Likewise
// /proc/self/cgroup showed the sandbox's cgroup paths (`pd-…`, `pool-…`): now `/` in every hierarchy, as
// bubblewrap joins the cgroups before its clone makes the cgroup namespace (SpawnRequest.join). Run on every
// way bubblewrap is started: the spawner (native and Node programs) and inline.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { type SandboxHandle, utf8 } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import type { ProcessDriver } from '../src/process-driver.js';
import { layout, readRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

const TENANT = 'tenant-mountinfo-7f3a';

/** The sandbox's mountinfo, and the root field (the host directory) of the mount at /workspace. */
async function workspaceMount(driver: ProcessDriver, box: SandboxHandle) {
  const r = await driver.exec(box, ['cat', '/proc/self/mountinfo']);
  expect(r.exitCode).toBe(0);
  const mountinfo = utf8(r.stdout);
  const line = mountinfo.split('\n').find((l) => l.split(' ')[4] === '/workspace');
  expect(line, mountinfo).toBeDefined();
  return { mountinfo, root: line!.split(' ')[3]! };
}

async function workspaceOf(driver: ProcessDriver, box: SandboxHandle): Promise<string> {
  const record = await readRecord(layout(driver.config.stateDir), box.id);
  if (!record) throw new Error(`no label file for ${box.id}`);
  return record.workspace;
}

describe.each([
  ['process', 'auto'],
  ['process', 'node'],
  ['inline', 'auto'],
] as const)('/proc/self/mountinfo in a sandbox (spawner %s, program %s)', (spawner, spawnerProgram) => {
  it('names no sandbox id, tenant, run, scaffold owner or count: a random directory, new each time', async () => {
    requireBwrap();
    const driver = makeDriver({ spawner, spawnerProgram, readyPool: 1 });
    const labels = { tenant: TENANT, runId: `run-${spawner}-${spawnerProgram}`, kind: 'command' } as const;
    const seen: string[] = [];
    // The first made on its own (the pool starts with it), the second from a scaffold made ahead, the third
    // the first's run again once that one is disposed.
    for (const [n, runId] of [labels.runId, `${labels.runId}-b`, labels.runId].entries()) {
      if (n > 0) await (driver as unknown as { ready: { filled(): Promise<void> } }).ready.filled();
      const box = await driver.provision({ labels: { ...labels, runId } });
      const workspace = await workspaceOf(driver, box);
      const { mountinfo, root } = await workspaceMount(driver, box);
      // What leaks: the workspace's host directory, as a path within its filesystem.
      expect(workspace.endsWith(root), `${root} of ${workspace}`).toBe(true);
      expect(root.endsWith(`/${basename(workspace)}`)).toBe(true);
      // What must not: anything of the sandbox's identity or of the driver's process.
      for (const secret of [box.id, box.id.slice(3), TENANT, runId, 'pool-']) {
        expect(mountinfo, secret).not.toContain(secret);
      }
      expect(seen).not.toContain(basename(workspace));
      seen.push(basename(workspace));
      if (n === 0) await driver.dispose(box);
    }
  }, 60_000);

  it('/proc/self/cgroup shows every hierarchy at its root: no sandbox id, scaffold owner or count', async () => {
    requireBwrap();
    const driver = makeDriver({ spawner, spawnerProgram, readyPool: 1 });
    const labels = { tenant: TENANT, runId: `cg-${spawner}-${spawnerProgram}`, kind: 'command' } as const;
    // The first made on its own, the second from a scaffold made ahead (`pool-<pid>-…` cgroups), with a
    // `cpus` share (the cpu cgroup too).
    for (const [n, limits] of [undefined, { memoryBytes: 256 * 1024 * 1024, pids: 64, cpus: 1 }].entries()) {
      if (n > 0) await (driver as unknown as { ready: { filled(): Promise<void> } }).ready.filled();
      const box = await driver.provision({ labels: { ...labels, runId: `${labels.runId}-${n}` }, limits });
      const r = await driver.exec(box, ['cat', '/proc/self/cgroup']);
      expect(r.exitCode).toBe(0);
      const text = utf8(r.stdout);
      const lines = text.split('\n').filter((l) => l !== '');
      expect(lines.length, text).toBeGreaterThan(0);
      // `<n>:<controllers>:<path>`: the path relative to the cgroup namespace's root, which is the
      // sandbox's own cgroup in each hierarchy it has one in (and bubblewrap's elsewhere).
      for (const line of lines)
        expect(line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1), text).toBe('/');
      for (const secret of [box.id, box.id.slice(3), 'pool-', 'everdict', `${process.pid}`]) {
        expect(text, secret).not.toContain(secret);
      }
      // Bubblewrap joined the cgroups before its clone and left them before the command ran: while a
      // command runs, its cgroups hold only the sandbox's processes (each in its pid namespace: two NSpids).
      const s = await driver.stream(box, ['sh', '-c', 'echo ready; cat']);
      s.stderr.resume();
      await new Promise<void>((resolve) => s.stdout.once('data', () => resolve()));
      for (const dir of (await readRecord(layout(driver.config.stateDir), box.id))!.limits.paths) {
        const pids = readFileSync(`${dir}/cgroup.procs`, 'utf8')
          .split('\n')
          .filter((l) => l !== '');
        expect(pids.length, dir).toBeGreaterThan(0);
        for (const pid of pids) {
          const nspid = /^NSpid:(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
          expect(nspid?.trim().split(/\s+/), `${dir}: ${pid}`).toHaveLength(2);
        }
      }
      s.stdin.end();
      expect(await s.exit).toEqual({ exitCode: 0, signal: null });
      await driver.dispose(box);
    }
  }, 60_000);
});
