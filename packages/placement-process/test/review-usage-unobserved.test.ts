// usage() claims only what was measured: a cgroup-v2 sandbox whose cgroup cannot be read (gone, or a label
// file naming no path) has no CPU time to report — null, as cgroup-v1 and rlimits answer — not 0 ms, which
// energy estimates would take as a measured idle sandbox.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CgroupV2Backend } from '../src/limits/cgroup-v2.js';
import { tempDir } from './helpers.js';

describe('cgroup-v2 usage', () => {
  it('is null, not zero, when the cgroup cannot be read', async () => {
    const mount = tempDir('everdict-v2-');
    const backend = new CgroupV2Backend(mount, 'everdict');
    const missing = backend.open([join(mount, 'everdict', 'gone')]);
    expect(await missing.usage()).toEqual({ cpuTimeMs: null, peakMemoryBytes: null });
  });

  it('reads cpu.stat and memory.peak when they are there', async () => {
    const dir = tempDir('everdict-v2-');
    writeFileSync(join(dir, 'cpu.stat'), 'usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n');
    writeFileSync(join(dir, 'memory.peak'), '1048576\n');
    const limits = new CgroupV2Backend(dir, 'everdict').open([dir]);
    expect(await limits.usage()).toEqual({ cpuTimeMs: 2.5, peakMemoryBytes: 1048576 });
  });
});
