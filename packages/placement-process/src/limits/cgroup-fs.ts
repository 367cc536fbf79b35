// Small file operations on cgroup filesystems, shared by the v1 and v2 backends.
import {
  closeSync,
  existsSync,
  openSync,
  readSync as readFd,
  readFileSync,
  rmdirSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CgroupHierarchy } from './limits.js';

export function write(path: string, value: string): void {
  writeFileSync(path, value);
}

/** Writes `value` into each of `paths`, all tried; returns the errors of those that failed. */
export function writeEach(paths: readonly string[], value: string): Error[] {
  const failed: Error[] = [];
  for (const path of paths) {
    try {
      writeFileSync(path, value);
    } catch (e) {
      failed.push(e as Error);
    }
  }
  return failed;
}

export function readSync(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * This process's own `cgroup.procs` in hierarchy `h` (from /proc/self/cgroup: `<n>:<controllers>:<path>`,
 * v2's line `0::<path>`), or null when it is in none there. Where a process moved into a sandbox's cgroups
 * is moved back to (`SandboxLimits.leave`); the spawners find theirs the same way for their warm write.
 */
export function ownProcs(h: CgroupHierarchy, own = readSync('/proc/self/cgroup')): string | null {
  for (const line of own.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const match =
      h.controller === '' ? line.startsWith('0::') : controllers.split(',').includes(h.controller);
    if (!match) continue;
    const rel = line.slice(second + 1);
    return `${h.mount}${rel === '/' ? '' : rel}/cgroup.procs`;
  }
  return null;
}

/** One buffer for every `CgroupFile` read: reads are synchronous, so never two at once. */
let scratch = Buffer.allocUnsafe(4096);

/**
 * A cgroup counter file a sandbox reads again and again — its counters at each command's start, end and
 * poll, its usage — opened once and then read with one `pread` at offset 0 (the kernel makes the text anew
 * for a read from 0: these files are shown by one `seq_show` each), where `readFileSync` is five calls
 * (open, fstat, read, read, close). The descriptor is `O_CLOEXEC` (libuv opens every file so): no
 * bubblewrap inherits it. A cgroup removed under an open descriptor answers ENODEV: any failed read drops
 * the descriptor and opens the path afresh, so what a caller sees of a missing or unreadable file is what
 * `readFileSync` would show. `close` when the sandbox's cgroups go (`remove`).
 *
 * NOT for task listings (v1 `tasks`, `cgroup.procs`): the kernel keeps the pid list it built for an open
 * file (and shares it with any later open of that cgroup) for a second after the last read, so a re-read
 * through a held descriptor can answer a list up to 1 s old — measured here: a held `tasks` answered 0
 * tasks with 3 in the cgroup. Those are opened afresh for every read (`threadsIn`, `pidsIn`).
 */
export class CgroupFile {
  private fd: number | null = null;

  constructor(readonly path: string) {}

  /** The file's text; throws what `openSync` would (ENOENT for a cgroup that is gone). */
  read(): string {
    if (this.fd === null) this.fd = openSync(this.path, 'r');
    try {
      let n = readFd(this.fd, scratch, 0, scratch.length, 0);
      // a text longer than the buffer (none of today's counter files is): read on from where it ended
      while (n === scratch.length) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, n);
        scratch = bigger;
        n += readFd(this.fd, scratch, n, scratch.length - n, n);
      }
      return scratch.toString('utf8', 0, n);
    } catch {
      this.close();
      return readFileSync(this.path, 'utf8');
    }
  }

  /** The file's text, or '' when it cannot be read (as `readSync`). */
  readOr(): string {
    try {
      return this.read();
    } catch {
      return '';
    }
  }

  close(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = null;
  }
}

/** The numbers in a cgroup listing (`cgroup.procs`, `tasks`, `cgroup.threads`: one id a line). */
function idsOf(text: string): number[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number);
}

/**
 * The processes in a cgroup. Read synchronously: a small kernel-made file whose read never waits on a
 * disk, where an asynchronous `readFile` costs four thread-pool trips (open, fstat, read, close).
 */
export function pidsIn(dir: string): number[] {
  return idsOf(readSync(`${dir}/cgroup.procs`));
}

/** `PF_EXITING` (include/linux/sched.h): set when a task enters `do_exit`; it never runs user code again. */
const PF_EXITING = 0x4;

/**
 * Whether process `pid`, once seen exiting, has finished: gone, or a zombie (`Z`/`X` in /proc/<pid>/stat).
 * A task leaves its cgroup's listings (`cgroup_exit`) before its last work — a namespace init then kills and
 * reaps its namespace's other processes — still charged to the cgroup. A pid that runs without PF_EXITING
 * is not the one seen exiting (reused): finished too.
 */
export function finished(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return true;
  const flags = Number(fields[6]);
  return Number.isInteger(flags) && (flags & PF_EXITING) === 0;
}

/**
 * Whether task `tid` has begun to exit: `/proc/<tid>/stat`'s flags (field 9) carry PF_EXITING, or the task
 * is gone. Anything unreadable for another reason (a /proc mounted with `hidepid`, a parse failure) counts
 * as not exiting: the caller then assumes the task may still run.
 */
export function exiting(tid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${tid}/stat`, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH';
  }
  const flags = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[6]);
  return Number.isInteger(flags) && (flags & PF_EXITING) !== 0;
}

/**
 * True while a task listed by `list` (every thread in a sandbox's cgroups; null: the listing could not be
 * read) can still run user code: one that has not begun to exit. After a command ended, its namespace's init
 * stays in the cgroups while the kernel tears the namespaces down (≈ 1–120 ms here, in `do_exit`, state D,
 * after bubblewrap's outer process has already reported the exit): such a task no longer counts. A task
 * forked between the listing and its parent's exit is caught by a second listing: every task alive then was
 * either listed the first time (and is exiting — PF_EXITING is never cleared) or was forked since, and a
 * task cannot leave its cgroups by itself (the sandbox has no cgroupfs).
 */
export function anyActive(list: () => number[] | null): boolean {
  const first = list();
  if (first === null) return true;
  if (first.length === 0) return false;
  for (const tid of first) if (!exiting(tid)) return true;
  const known = new Set(first);
  const again = list();
  return again === null || again.some((tid) => !known.has(tid));
}

/**
 * Every thread id listed in `files` (v1 `tasks`, v2 `cgroup.threads`), each opened afresh (a held
 * descriptor may answer a stale list: `CgroupFile`); null when one cannot be read.
 */
export function threadsIn(files: readonly string[]): number[] | null {
  const out: number[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      // The cgroup is gone: nothing in it. A cgroup without the file (a v2 kernel before 4.14 has no
      // cgroup.threads) cannot be listed: unknown, so active.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(dirname(file))) continue;
      return null;
    }
    out.push(...idsOf(text));
  }
  return out;
}

/**
 * A condition on a cgroup: true (met), false (not yet), null (cannot be known — stop waiting).
 */
export type CgroupCheck = () => boolean | null;

/** The first pause of `pollUntil`; each next one is twice as long, up to `POLL_MAX_MS`. */
const POLL_FIRST_MS = 1;
const POLL_MAX_MS = 16;

/**
 * Resolves true once `check` holds, false when it cannot be known or `timeoutMs` passed first. Checked at
 * once, then after timers of 1, 2, 4, 8, 16, 16 … ms: the event loop runs between checks (no busy wait),
 * and a condition met within a millisecond or two — the common case — costs one or two reads.
 */
export async function pollUntil(check: CgroupCheck, timeoutMs: number): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  for (let pause = POLL_FIRST_MS; ; pause = Math.min(POLL_MAX_MS, pause * 2)) {
    const met = check();
    if (met !== false) return met === true;
    const left = end - performance.now();
    if (left <= 0) return false;
    await sleep(Math.min(pause, left));
  }
}

/**
 * As `pollUntil`, woken by inotify on `file` (v2's `cgroup.events` is modified when `populated` changes)
 * instead of timers; a file that cannot be watched falls back to `pollUntil`.
 */
export function watchUntil(file: string, check: CgroupCheck, timeoutMs: number): Promise<boolean> {
  const first = check();
  if (first !== false) return Promise.resolve(first === true);
  let watcher: ReturnType<typeof watch>;
  return new Promise<boolean>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (met: boolean) => {
      clearTimeout(timer);
      watcher.close();
      resolve(met);
    };
    try {
      watcher = watch(file, { persistent: false }, () => {
        const met = check();
        if (met !== false) done(met === true);
      });
    } catch {
      resolve(pollUntil(check, timeoutMs));
      return;
    }
    watcher.on('error', () => done(check() === true));
    timer = setTimeout(() => done(check() === true), timeoutMs);
    // changed between the first check and the watch
    const met = check();
    if (met !== false) done(met === true);
  });
}

/**
 * SIGKILLs every process in the cgroup until it is empty (bounded), then removes the directory. The rmdir
 * goes through the thread pool: it takes the kernel's cgroup_mutex, which a concurrent join or mkdir may
 * hold across an RCU grace period, and a memory cgroup's removal waits for its offlining — milliseconds
 * the driver's thread would otherwise stand still (README, Figures).
 */
export async function killAndRemove(dir: string): Promise<boolean> {
  try {
    await rmdir(dir); // the common case: every command has ended, the cgroup is empty
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EBUSY') throw e;
  }
  for (let round = 0; round < 200; round++) {
    const pids = pidsIn(dir);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await sleep(Math.min(50, 2 + round * 2));
  }
  for (let round = 0; round < 100; round++) {
    try {
      await rmdir(dir);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return false;
      if (code !== 'EBUSY') throw e;
      await sleep(10);
    }
  }
  rmdirSync(dir);
  return true;
}
