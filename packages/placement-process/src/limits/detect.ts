// Picks the limit mechanism this host allows: cgroup v2 when a cgroup2 hierarchy offers memory, pids and
// cpu and is writable; else the v1 controllers memory, pids and cpuacct (cpu too if mounted) when
// writable; else rlimits. An explicitly requested mechanism that is not available is refused.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlacementError } from '@everdict/placement';
import type { LimitsMode } from '../process-driver-config.js';
import { CgroupV1Backend, type V1Controller, type V1Mounts } from './cgroup-v1.js';
import { CgroupV2Backend } from './cgroup-v2.js';
import type { LimitBackend } from './limits.js';
import { RlimitBackend } from './rlimit.js';

interface CgroupMounts {
  v2: string[];
  v1: Partial<Record<V1Controller, string>>;
}

export function cgroupMounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): CgroupMounts {
  const out: CgroupMounts = { v2: [], v1: {} };
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4];
    const [fstype, , superOpts = ''] = right.split(' ');
    if (!mountPoint) continue;
    if (fstype === 'cgroup2') out.v2.push(mountPoint);
    if (fstype === 'cgroup') {
      for (const opt of superOpts.split(',')) {
        if (opt === 'memory' || opt === 'pids' || opt === 'cpuacct' || opt === 'cpu')
          out.v1[opt] ??= mountPoint;
      }
    }
  }
  return out;
}

function writable(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

function v2Backend(m: CgroupMounts, parent: string): LimitBackend | null {
  for (const mount of m.v2) {
    let controllers: string[] = [];
    try {
      controllers = readFileSync(join(mount, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    } catch {
      continue;
    }
    if (['memory', 'pids', 'cpu'].every((c) => controllers.includes(c)) && writable(join(mount, parent))) {
      return new CgroupV2Backend(mount, parent);
    }
  }
  return null;
}

function v1Backend(m: CgroupMounts, parent: string): LimitBackend | null {
  const { memory, pids, cpuacct, cpu } = m.v1;
  if (!memory || !pids || !cpuacct) return null;
  const mounts: V1Mounts = cpu ? { memory, pids, cpuacct, cpu } : { memory, pids, cpuacct };
  const dirs = new Set([memory, pids, cpuacct, ...(cpu ? [cpu] : [])].map((d) => join(d, parent)));
  for (const d of dirs) if (!writable(d)) return null;
  return new CgroupV1Backend(mounts, parent);
}

export function detectLimits(mode: LimitsMode, parent: string, mounts = cgroupMounts()): LimitBackend {
  const v2 = mode === 'auto' || mode === 'cgroup-v2' ? v2Backend(mounts, parent) : null;
  if (v2) return v2;
  const v1 = mode === 'auto' || mode === 'cgroup-v1' ? v1Backend(mounts, parent) : null;
  if (v1) return v1;
  if (mode === 'auto' || mode === 'rlimit') return new RlimitBackend();
  throw new PlacementError('unsupported', `the ${mode} limit mechanism is not available on this host`, {
    mode,
  });
}
