// rlimits, where no cgroup hierarchy is writable: `prlimit` sets RLIMIT_AS (memory), RLIMIT_NPROC (pids —
// counted per host user, so shared by every sandbox running as the same uid) and RLIMIT_CPU (per
// process) before bubblewrap starts. Nothing here is measured: usage is null, OOM and refused forks are
// not observed (the command sees ENOMEM / EAGAIN and exits as it will). The CPU limit is the one outcome
// seen: its soft limit is a second below the hard one, so the kernel ends a process that reaches it with
// SIGXCPU (sent for nothing else) rather than a SIGKILL that looks like any other (killedByCpuRlimit).
import { availableParallelism, constants } from 'node:os';
import type { ResourceLimits } from '@everdict/placement';
import type { LimitBackend, SandboxLimits } from './limits.js';

/** RLIMIT_CPU's soft limit in whole seconds (the kernel's unit) for a `cpuTimeMs`. */
export function cpuRlimitSeconds(cpuTimeMs: number): number {
  return Math.max(1, Math.ceil(cpuTimeMs / 1000));
}

/** The exit status (shell encoding) of a command the kernel ended with SIGXCPU. */
export const SIGXCPU_STATUS = 128 + constants.signals.SIGXCPU;

/**
 * Whether a command ended by the CPU limit, from its exit status as bubblewrap reported it: SIGXCPU (152 —
 * bubblewrap encodes a signal as 128 + n, so a plain `exit 152` reads the same; one that could not have used
 * the limit's CPU seconds in its wall time on this host's CPUs is not taken for it).
 */
export function killedByCpuRlimit(status: number | null, cpuTimeMs: number, wallMs: number): boolean {
  return status === SIGXCPU_STATUS && wallMs * availableParallelism() >= cpuRlimitSeconds(cpuTimeMs) * 1000;
}

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
    if (limits.cpuTimeMs !== undefined) {
      // soft:hard — SIGXCPU at the soft limit (its default action ends the process), SIGKILL a CPU second
      // later for one that catches or ignores it; no core file (SIGXCPU's default dumps one) in the workspace.
      const soft = cpuRlimitSeconds(limits.cpuTimeMs);
      wrapper.push(`--cpu=${soft}:${soft + 1}`, '--core=0');
    }
    wrapper.push('--');
    return {
      mechanism: 'rlimit',
      wrapper,
      joinsByPid: false,
      join: () => undefined,
      joinFiles: [],
      leave: () => [],
      leaveFiles: [],
      counters: async () => ({ oomKills: 0, pidsRefused: 0 }),
      usage: async () => ({ cpuTimeMs: null, peakMemoryBytes: null }),
      processes: async () => [],
      active: async () => false,
      settle: async () => true,
      remove: async () => [],
    };
  }
}
