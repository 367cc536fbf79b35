// rlimits, where no cgroup hierarchy is writable: `prlimit` sets RLIMIT_AS (memory), RLIMIT_NPROC (pids —
// counted per host user, so shared by every sandbox running as the same uid) and RLIMIT_CPU (per
// process) before bubblewrap starts. Nothing here is measured: usage is null, OOM and refused forks are
// not observed (the command sees ENOMEM / EAGAIN and exits as it will).
import type { ResourceLimits } from '@everdict/placement';
import type { LimitBackend, SandboxLimits } from './limits.js';

export class RlimitBackend implements LimitBackend {
  readonly mechanism = 'rlimit' as const;
  readonly warm = null;

  plan(): string[] {
    return [];
  }

  async prepare(): Promise<string[]> {
    return [];
  }

  async create(_id: string, limits: ResourceLimits): Promise<SandboxLimits> {
    return this.open([], limits);
  }

  open(_paths: readonly string[], limits: ResourceLimits): SandboxLimits {
    const wrapper = ['prlimit', `--as=${limits.memoryBytes}`, `--nproc=${limits.pids}`];
    if (limits.cpuTimeMs !== undefined)
      wrapper.push(`--cpu=${Math.max(1, Math.ceil(limits.cpuTimeMs / 1000))}`);
    wrapper.push('--');
    return {
      mechanism: 'rlimit',
      wrapper,
      joinsByPid: false,
      join: () => undefined,
      joinFiles: [],
      counters: async () => ({ oomKills: 0, pidsRefused: 0 }),
      usage: async () => ({ cpuTimeMs: null, peakMemoryBytes: null }),
      processes: async () => [],
      active: async () => false,
      remove: async () => [],
    };
  }
}
