// The limit mechanism of a sandbox: cgroup v2, the cgroup v1 controllers, or rlimits. One interface, one
// file per mechanism (cgroup-v2.ts, cgroup-v1.ts, rlimit.ts); detect.ts picks the one this host allows.
import type { LimitMechanism, ResourceLimits } from '@everdict/placement';

export interface LimitCounters {
  /** Processes the kernel's OOM killer killed in this sandbox so far. */
  readonly oomKills: number;
  /** Forks refused for the pid limit so far. */
  readonly pidsRefused: number;
}

export interface MeasuredUsage {
  readonly cpuTimeMs: number | null;
  readonly peakMemoryBytes: number | null;
}

/** One sandbox's limits, created or reopened from its label file. */
export interface SandboxLimits {
  readonly mechanism: LimitMechanism;
  /** Extra argv put before bubblewrap's (rlimits: `prlimit …`); empty for cgroups. */
  readonly wrapper: readonly string[];
  /**
   * Whether each command's bubblewrap must be moved in by pid (cgroups) before it makes the sandbox's
   * namespaces (sandbox-command.ts), and moved back out before the command runs.
   */
  readonly joinsByPid: boolean;
  /** Moves a process (and so everything it forks later) into the sandbox's cgroups. Synchronous: it runs while the command is held. */
  join(pid: number): void;
  /** The files `join` writes the pid into (`cgroup.procs` of each cgroup): the spawner writes them itself. */
  readonly joinFiles: readonly string[];
  /**
   * Moves a process `join` moved in back to this process's own cgroups (`leaveFiles`). Synchronous, as `join`.
   * Best-effort: every file is tried, and the writes that failed are returned (not thrown) — the process then
   * stays in the sandbox's cgroups there until it exits (README, Limits).
   */
  leave(pid: number): readonly Error[];
  /**
   * The `cgroup.procs` of this process's own cgroup in each hierarchy of `joinFiles` (the spawner's: its
   * child), where `leave` writes the pid; one the process is in no cgroup of is left out.
   */
  readonly leaveFiles: readonly string[];
  counters(): Promise<LimitCounters>;
  usage(): Promise<MeasuredUsage>;
  /** Processes in the sandbox now (cgroups), or [] when the mechanism cannot list them. */
  processes(): Promise<number[]>;
  /**
   * Whether a task in the sandbox can still run code: one listed in its cgroups that has not begun to exit
   * (cgroup-fs.ts `anyActive`); false when the mechanism cannot list them (rlimit, as `processes`).
   */
  active(): Promise<boolean>;
  /**
   * Resolves once no task is left in the sandbox's cgroups (true), or after `timeoutMs` (false; at once
   * when the mechanism cannot list them: rlimit, true). What a command left behind in its pid namespace is
   * killed only as its init exits, after the command's exit was reported, and that exit is CPU time charged
   * to the sandbox: its usage is final only once this resolved (run-commands.ts `settled`). v2 waits on
   * `cgroup.events` (`populated 0`, inotify), v1 re-reads the `tasks` files with a short backoff. Then
   * each of `inits` (ended commands' namespace inits) must have finished exiting (cgroup-fs.ts `finished`):
   * an init leaves the listing before it kills and reaps the rest of its namespace, still charged.
   */
  settle(timeoutMs: number, inits?: readonly number[]): Promise<boolean>;
  /** Removes what the mechanism created; returns words for what was removed (`cgroup:memory`, …). */
  remove(): Promise<string[]>;
}

/** A cgroup hierarchy: where it is mounted and the controller that names it in /proc/<pid>/cgroup ('' for v2). */
export interface CgroupHierarchy {
  readonly mount: string;
  readonly controller: string;
}

export interface LimitBackend {
  readonly mechanism: LimitMechanism;
  /**
   * A hierarchy whose `cgroup.procs` the spawner may write its own pid into, to the cgroup it is already in
   * (a move to where it is: nothing changes) — see spawner/script.ts, "warm"; null without cgroups.
   */
  readonly warm: CgroupHierarchy | null;
  /** The paths a sandbox of this id will have (written to its label file before they exist). */
  plan(id: string, limits: Pick<ResourceLimits, 'cpus'>): string[];
  /**
   * Makes the sandbox's cgroups and writes its limits. `made`: directories already made for this id by
   * `prepare` (a ready scaffold, ready-pool.ts), empty and never joined — only the limits are written there.
   */
  create(id: string, limits: ResourceLimits, made?: readonly string[]): Promise<SandboxLimits>;
  /**
   * Makes, ahead of any sandbox, the cgroups every sandbox of this id would have (all but the optional
   * `cpu` one), without limits, off the event loop; returns their paths (none for rlimits).
   */
  prepare(id: string): Promise<string[]>;
  /** Reopens a sandbox's limits from the paths its label file recorded (adopt, reap). */
  open(paths: readonly string[], limits: ResourceLimits): SandboxLimits;
}

/** A counter line `name N` in a cgroup file of `key value` lines; 0 when absent. */
export function keyedCount(text: string, key: string): number {
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key && v !== undefined) return Number(v);
  }
  return 0;
}
