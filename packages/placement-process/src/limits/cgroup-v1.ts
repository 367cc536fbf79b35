// cgroup v1: the memory, pids and cpuacct controllers (required) and cpu (optional, for `cpus`), each
// a hierarchy of its own (or co-mounted). A sandbox has one directory per controller:
// <mount>/<parent>/<id>. OOM kills are memory.oom_control's `oom_kill`; refused forks pids.events' `max`.
import { existsSync, mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceLimits } from '@everdict/placement';
import {
  anyActive,
  CgroupFile,
  finished,
  killAndRemove,
  ownProcs,
  pidsIn,
  pollUntil,
  readSync,
  threadsIn,
  write,
  writeEach,
} from './cgroup-fs.js';
import { type CgroupHierarchy, keyedCount, type LimitBackend, type SandboxLimits } from './limits.js';

export type V1Controller = 'memory' | 'pids' | 'cpuacct' | 'cpu';
export type V1Mounts = Readonly<Partial<Record<V1Controller, string>>> & {
  readonly memory: string;
  readonly pids: string;
  readonly cpuacct: string;
};

const CFS_PERIOD_US = 100_000;

export class CgroupV1Backend implements LimitBackend {
  readonly mechanism = 'cgroup-v1' as const;
  /** Whether memory cgroups have `memory.memsw.*` (swap accounting): found on the first create. */
  private memsw: boolean | undefined;

  readonly warm: CgroupHierarchy;

  constructor(
    private readonly mounts: V1Mounts,
    private readonly parent: string,
  ) {
    this.warm = { mount: mounts.pids, controller: 'pids' };
  }

  /** One directory per controller; the cpu controller only when a `cpus` share is asked for. */
  private dirs(id: string, limits: Pick<ResourceLimits, 'cpus'>): Map<V1Controller, string> {
    const out = new Map<V1Controller, string>();
    for (const c of ['memory', 'pids', 'cpuacct', 'cpu'] as const) {
      const m = this.mounts[c];
      if (m !== undefined && (c !== 'cpu' || limits.cpus !== undefined)) out.set(c, join(m, this.parent, id));
    }
    return out;
  }

  plan(id: string, limits: Pick<ResourceLimits, 'cpus'>): string[] {
    return [...new Set(this.dirs(id, limits).values())];
  }

  async prepare(id: string): Promise<string[]> {
    const dirs = this.plan(id, {}); // no `cpus`: the cpu cgroup is made when a sandbox asks for a share
    await Promise.all(dirs.map((dir) => mkdir(dir, { recursive: true })));
    return dirs;
  }

  async create(id: string, limits: ResourceLimits, made: readonly string[] = []): Promise<SandboxLimits> {
    const dirs = this.dirs(id, limits);
    // Made ahead when a scaffold was ready (ready-pool.ts, asynchronously); else here, synchronously (tried
    // asynchronous, all at once: ≈ 0.5 ms more CPU per sandbox for the thread-pool trips and no throughput
    // gained in the runner's bench, README): a cgroup mkdir takes the kernel's cgroup_mutex, which a
    // concurrent cgroup.procs write holds across an RCU grace period (p99 ≈ 10 ms).
    for (const dir of new Set(dirs.values())) if (!made.includes(dir)) mkdirSync(dir, { recursive: true });
    const mem = dirs.get('memory')!;
    write(`${mem}/memory.limit_in_bytes`, String(limits.memoryBytes));
    // Whether swap is accounted is the same for every memory cgroup of the host: looked up once.
    this.memsw ??= existsSync(`${mem}/memory.memsw.limit_in_bytes`);
    if (this.memsw) {
      write(`${mem}/memory.memsw.limit_in_bytes`, String(limits.memoryBytes));
    }
    write(`${dirs.get('pids')!}/pids.max`, String(limits.pids));
    const cpu = dirs.get('cpu');
    if (cpu !== undefined && limits.cpus !== undefined) {
      write(`${cpu}/cpu.cfs_period_us`, String(CFS_PERIOD_US));
      write(`${cpu}/cpu.cfs_quota_us`, String(Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))));
    }
    return new V1Sandbox(dirs, this.homes(dirs));
  }

  /** This process's own cgroup.procs in each hierarchy of `dirs` (SandboxLimits.leaveFiles), read now. */
  private homes(dirs: Map<V1Controller, string>): Map<V1Controller, string> {
    const own = readSync('/proc/self/cgroup');
    const out = new Map<V1Controller, string>();
    for (const c of dirs.keys()) {
      const procs = ownProcs({ mount: this.mounts[c]!, controller: c }, own);
      if (procs !== null) out.set(c, procs);
    }
    return out;
  }

  open(paths: readonly string[]): SandboxLimits {
    const dirs = new Map<V1Controller, string>();
    for (const p of paths) {
      for (const c of ['memory', 'pids', 'cpuacct', 'cpu'] as const) {
        const m = this.mounts[c];
        if (m !== undefined && p.startsWith(`${m}/`)) dirs.set(c, p);
      }
    }
    return new V1Sandbox(dirs, this.homes(dirs));
  }
}

class V1Sandbox implements SandboxLimits {
  readonly mechanism = 'cgroup-v1' as const;
  readonly wrapper: readonly string[] = [];
  readonly joinsByPid = true;
  private readonly unique: string[];
  readonly joinFiles: readonly string[];
  readonly leaveFiles: readonly string[];
  /** Each cgroup's `tasks`: every thread in it (cgroup.procs lists thread-group leaders only). */
  private readonly taskFiles: readonly string[];
  /**
   * What `settle` and `active` list: the cpuacct cgroup's `tasks` alone. Every task of the sandbox is in all
   * of its cgroups — bubblewrap joins them all, cpuacct last, before its clone, and nothing in the sandbox can
   * move itself — so one listing sees them all; the CPU time `settle` waits on is charged only there, and
   * what the others could still hold only frees memory (the peak is a maximum). Each listing builds a pid
   * list in the kernel: two fewer per call (README, "Settled usage").
   */
  private readonly listFiles: readonly string[];
  /** The files read at each command's start, end and poll, and by `usage` (held open: cgroup-fs.ts). */
  private readonly oomControl: CgroupFile | null;
  private readonly pidsEvents: CgroupFile | null;
  private readonly cpuUsage: CgroupFile | null;
  private readonly memoryPeak: CgroupFile | null;

  constructor(
    private readonly dirs: Map<V1Controller, string>,
    homes: Map<V1Controller, string>,
  ) {
    this.unique = [...new Set(dirs.values())];
    this.joinFiles = this.unique.map((dir) => `${dir}/cgroup.procs`);
    // each joined directory's hierarchy once (co-mounted controllers share one), as `unique`
    const leave = new Set<string>();
    for (const dir of this.unique) {
      const c = [...dirs].find(([, d]) => d === dir)![0];
      const home = homes.get(c);
      if (home !== undefined) leave.add(home);
    }
    this.leaveFiles = [...leave];
    this.taskFiles = this.unique.map((dir) => `${dir}/tasks`);
    const acct = dirs.get('cpuacct');
    this.listFiles = acct === undefined ? this.taskFiles : [`${acct}/tasks`];
    const file = (c: V1Controller, name: string) => {
      const dir = dirs.get(c);
      return dir === undefined ? null : new CgroupFile(`${dir}/${name}`);
    };
    this.oomControl = file('memory', 'memory.oom_control');
    this.pidsEvents = file('pids', 'pids.events');
    this.cpuUsage = file('cpuacct', 'cpuacct.usage');
    this.memoryPeak = file('memory', 'memory.max_usage_in_bytes');
  }

  join(pid: number): void {
    for (const file of this.joinFiles) write(file, String(pid));
  }

  leave(pid: number): Error[] {
    return writeEach(this.leaveFiles, String(pid));
  }

  async counters() {
    return {
      oomKills: this.oomControl ? keyedCount(this.oomControl.readOr(), 'oom_kill') : 0,
      pidsRefused: this.pidsEvents ? keyedCount(this.pidsEvents.readOr(), 'max') : 0,
    };
  }

  async usage() {
    const ns = this.cpuUsage ? this.cpuUsage.readOr().trim() : '';
    const peak = this.memoryPeak ? this.memoryPeak.readOr().trim() : '';
    return {
      cpuTimeMs: ns === '' ? null : Number(ns) / 1e6,
      peakMemoryBytes: peak === '' ? null : Number(peak),
    };
  }

  async processes(): Promise<number[]> {
    const all = new Set<number>();
    for (const dir of this.unique) for (const pid of pidsIn(dir)) all.add(pid);
    return [...all];
  }

  async active(): Promise<boolean> {
    return anyActive(() => threadsIn(this.listFiles));
  }

  settle(timeoutMs: number, inits: readonly number[] = []): Promise<boolean> {
    return pollUntil(() => {
      const tasks = threadsIn(this.listFiles);
      if (tasks === null) return null;
      return tasks.length === 0 && inits.every(finished);
    }, timeoutMs);
  }

  async remove(): Promise<string[]> {
    for (const f of [this.oomControl, this.pidsEvents, this.cpuUsage, this.memoryPeak]) f?.close();
    // each directory once (co-mounted controllers share one), named by its first controller; side by side
    const byDir = new Map<string, V1Controller>();
    for (const [c, dir] of this.dirs) if (!byDir.has(dir)) byDir.set(dir, c);
    const removed = await Promise.all(
      [...byDir].map(async ([dir, c]) => ((await killAndRemove(dir)) ? `cgroup:${c}` : null)),
    );
    return removed.filter((name): name is string => name !== null);
  }
}
