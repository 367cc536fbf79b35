// Small file operations on cgroup filesystems, shared by the v1 and v2 backends.
import { readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { readFile, rmdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return '';
  }
}

export function write(path: string, value: string): void {
  writeFileSync(path, value);
}

export function readSync(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export async function pidsIn(dir: string): Promise<number[]> {
  return (await readText(`${dir}/cgroup.procs`))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number);
}

/** SIGKILLs every process in the cgroup until it is empty (bounded), then removes the directory. */
export async function killAndRemove(dir: string): Promise<boolean> {
  try {
    rmdirSync(dir); // the common case: every command has ended, the cgroup is empty
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EBUSY') throw e;
  }
  for (let round = 0; round < 200; round++) {
    const pids = await pidsIn(dir);
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
