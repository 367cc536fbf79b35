// cgroup v2: one directory per sandbox, <mount>/<parent>/<id>, with memory, pids and cpu enabled down
// the path. OOM kills are memory.events' `oom_kill`; refused forks pids.events' `max`; cgroup.kill ends
// everything at once. (This host mounts the v1 controllers, so this backend is not exercised here.)
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
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
  watchUntil,
  write,
  writeEach,
} from './cgroup-fs.js';
import { type CgroupHierarchy, keyedCount, type LimitBackend, type SandboxLimits } from './limits.js';

const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
const CFS_PERIOD_US = 100_000;

export class CgroupV2Backend implements LimitBackend {
  readonly mechanism = 'cgroup-v2' as const;

  readonly warm: CgroupHierarchy;

  constructor(
    private readonly mount: string,
    private readonly parent: string,
  ) {
    this.warm = { mount, controller: '' };
  }

  plan(id: string): string[] {
    return [join(this.mount, this.parent, id)];
  }

  /** Enables the controllers in every cgroup from the mount down to the parent (children inherit none by default). */
  private enableDown(): void {
    let dir = this.mount;
    for (const part of ['', ...this.parent.split('/')]) {
      if (part !== '') {
        dir = join(dir, part);
        mkdirSync(dir, { recursive: true });
      }
      const have = readSync(`${dir}/cgroup.subtree_control`).split(/\s+/);
      const missing = CONTROLLERS.filter((c) => !have.includes(c));
      if (missing.length > 0) write(`${dir}/cgroup.subtree_control`, missing.map((c) => `+${c}`).join(' '));
    }
  }

  async prepare(id: string): Promise<string[]> {
    this.enableDown();
    const dir = join(this.mount, this.parent, id);
    await mkdir(dir, { recursive: true });
    return [dir];
  }

  async create(id: string, limits: ResourceLimits, made: readonly string[] = []): Promise<SandboxLimits> {
    const dir = join(this.mount, this.parent, id);
    if (!made.includes(dir)) {
      this.enableDown();
      mkdirSync(dir, { recursive: true });
    }
    write(`${dir}/memory.max`, String(limits.memoryBytes));
    if (existsSync(`${dir}/memory.swap.max`)) write(`${dir}/memory.swap.max`, '0');
    write(`${dir}/pids.max`, String(limits.pids));
    if (limits.cpus !== undefined) {
      write(`${dir}/cpu.max`, `${Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))} ${CFS_PERIOD_US}`);
    }
    return new V2Sandbox(dir, ownProcs(this.warm));
  }

  open(paths: readonly string[]): SandboxLimits {
    return new V2Sandbox(paths[0] ?? join(this.mount, this.parent, 'missing'), ownProcs(this.warm));
  }
}

class V2Sandbox implements SandboxLimits {
  readonly mechanism = 'cgroup-v2' as const;
  readonly wrapper: readonly string[] = [];
  readonly joinsByPid = true;

  /** The files read at each command's start, end and poll, and by `usage` (held open: cgroup-fs.ts). */
  private readonly memoryEvents: CgroupFile;
  private readonly pidsEvents: CgroupFile;
  private readonly cpuStat: CgroupFile;
  private readonly memoryPeak: CgroupFile;

  /** This process's own cgroup.procs (SandboxLimits.leaveFiles), read when the sandbox was made or opened. */
  readonly leaveFiles: readonly string[];

  constructor(
    private readonly dir: string,
    home: string | null,
  ) {
    this.leaveFiles = home === null ? [] : [home];
    this.memoryEvents = new CgroupFile(`${dir}/memory.events`);
    this.pidsEvents = new CgroupFile(`${dir}/pids.events`);
    this.cpuStat = new CgroupFile(`${dir}/cpu.stat`);
    this.memoryPeak = new CgroupFile(`${dir}/memory.peak`);
  }

  get joinFiles(): readonly string[] {
    return [`${this.dir}/cgroup.procs`];
  }

  join(pid: number): void {
    write(`${this.dir}/cgroup.procs`, String(pid));
  }

  leave(pid: number): Error[] {
    return writeEach(this.leaveFiles, String(pid));
  }

  async counters() {
    return {
      oomKills: keyedCount(this.memoryEvents.readOr(), 'oom_kill'),
      pidsRefused: keyedCount(this.pidsEvents.readOr(), 'max'),
    };
  }

  async usage() {
    // an unreadable cpu.stat (the cgroup gone) measured nothing: null, not 0 ms
    const stat = this.cpuStat.readOr();
    const usec = /^usage_usec\s/m.test(stat) ? keyedCount(stat, 'usage_usec') : null;
    const peak = this.memoryPeak.readOr().trim();
    return {
      cpuTimeMs: usec === null ? null : usec / 1000,
      peakMemoryBytes: peak === '' ? null : Number(peak),
    };
  }

  async processes(): Promise<number[]> {
    return pidsIn(this.dir);
  }

  async active(): Promise<boolean> {
    // cgroup.threads lists every thread of a v2 cgroup (an unreadable one counts as active: cgroup-fs.ts)
    return anyActive(() => threadsIn([`${this.dir}/cgroup.threads`]));
  }

  async settle(timeoutMs: number, inits: readonly number[] = []): Promise<boolean> {
    const end = performance.now() + timeoutMs;
    const events = `${this.dir}/cgroup.events`;
    // `populated 0`: no task in the cgroup or below; a cgroup that is gone holds none
    const empty = (): boolean | null => {
      let text: string;
      try {
        text = readFileSync(events, 'utf8');
      } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(this.dir) ? true : null;
      }
      return /^populated\s+0\s*$/m.test(text);
    };
    if (!(await watchUntil(events, empty, timeoutMs))) return false;
    // the inits' last work comes after they left the cgroup: no event for it
    return pollUntil(() => inits.every(finished), Math.max(0, end - performance.now()));
  }

  async remove(): Promise<string[]> {
    for (const f of [this.memoryEvents, this.pidsEvents, this.cpuStat, this.memoryPeak]) f.close();
    if (existsSync(`${this.dir}/cgroup.kill`)) {
      try {
        write(`${this.dir}/cgroup.kill`, '1');
      } catch {
        // already empty or gone
      }
    }
    return (await killAndRemove(this.dir)) ? ['cgroup'] : [];
  }
}
