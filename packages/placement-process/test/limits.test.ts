// Limit mechanisms: which one this host uses (capacity/describe say so), the rlimit fallback really
// applied, and mount-table parsing for hosts laid out otherwise.
import { utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { describe, expect, it } from 'vitest';
import { cgroupMounts, detectLimits } from '../src/limits/detect.js';
import { makeDriver, requireBwrap } from './helpers.js';

const labels = (runId: string) => ({ tenant: 'limits', runId, kind: 'command' });

describe('limit mechanisms', () => {
  it('reports the mechanism in force, the same in describe, capacity and usage', async () => {
    requireBwrap();
    const driver = makeDriver();
    const mechanism = driver.describe().mechanism;
    expect(['cgroup-v2', 'cgroup-v1', 'rlimit']).toContain(mechanism);
    expect((await driver.capacity()).mechanism).toBe(mechanism);
    const h = await driver.provision({ labels: labels('m-1') });
    expect((await driver.usage(h)).mechanism).toBe(mechanism);
  });

  it('falls back to rlimits: prlimit sets the address-space and process limits; usage is not measured', async () => {
    const driver = makeDriver({ limits: 'rlimit' });
    expect(driver.describe().mechanism).toBe('rlimit');
    const h = await driver.provision({
      labels: labels('r-1'),
      limits: { memoryBytes: 256 * 1024 * 1024, pids: 77 },
    });
    const limits = utf8((await driver.exec(h, ['cat', '/proc/self/limits'])).stdout);
    expect(limits).toMatch(new RegExp(`Max address space\\s+${256 * 1024 * 1024}\\s`));
    expect(limits).toMatch(/Max processes\s+77\s/);
    expect(await driver.usage(h)).toMatchObject({
      cpuTimeMs: null,
      peakMemoryBytes: null,
      mechanism: 'rlimit',
    });
  });

  it('rlimits: a command the CPU limit ended answers timeout (bound cpu), as under cgroups', async () => {
    requireBwrap();
    // RLIMIT_CPU's soft limit ends it with SIGXCPU (exit status 152); before, the hard limit's SIGKILL came
    // back as a plain exit 137, like any other kill.
    const driver = makeDriver({ limits: 'rlimit' });
    const h = await driver.provision({ labels: labels('r-cpu'), limits: { cpuTimeMs: 1000 } });
    const spin = ['sh', '-c', 'while :; do :; done'];
    const err = await refusal(driver.exec(h, spin, { timeoutMs: 120_000 }), 'timeout');
    expect(err.detail).toMatchObject({ bound: 'cpu', limitMs: 1000, result: { exitCode: 152 } });
    const s = await driver.stream(h, spin);
    s.stdin.end();
    s.stdout.resume();
    s.stderr.resume();
    expect((await refusal(s.exit, 'timeout')).detail).toMatchObject({ bound: 'cpu', limitMs: 1000 });
    // a command's own exit 152, far too short to have used the limit's CPU seconds, is its own
    const long = await driver.provision({ labels: labels('r-cpu-own'), limits: { cpuTimeMs: 600_000 } });
    expect((await driver.exec(long, ['sh', '-c', 'exit 152'])).exitCode).toBe(152);
    expect(utf8((await driver.exec(long, ['cat', '/proc/self/limits'])).stdout)).toMatch(
      /Max cpu time\s+600\s+601\s+seconds/,
    );
  });

  it('reads cgroup mounts from a mount table: v2, separate v1 controllers, co-mounted cpu,cpuacct', () => {
    const table = [
      '30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755',
      '31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct',
      '32 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
      '33 30 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids',
      '34 30 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
    ].join('\n');
    expect(cgroupMounts(table)).toEqual({
      v2: ['/sys/fs/cgroup/unified'],
      v1: {
        cpu: '/sys/fs/cgroup/cpu,cpuacct',
        cpuacct: '/sys/fs/cgroup/cpu,cpuacct',
        memory: '/sys/fs/cgroup/memory',
        pids: '/sys/fs/cgroup/pids',
      },
    });
    expect(detectLimits('auto', 'everdict', { v2: [], v1: {} }).mechanism).toBe('rlimit');
    expect(() => detectLimits('cgroup-v1', 'everdict', { v2: [], v1: {} })).toThrow(/not available/);
  });
});
