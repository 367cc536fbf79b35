// However the owner of a driver dies — process.exit, an uncaught exception, SIGKILL of its process group, or
// the end of the worker thread it runs in — no bubblewrap of it and no sandboxed process survives, even
// with commands caught mid-start (README, "The owner's death"). Before, bubblewrap's own --die-with-parent
// left some: set only after bubblewrap's clone, and a held namespace init reads end-of-file on --block-fd as
// "go", so an init ran its command reparented to pid 1, in no sandbox cgroup; the Node spawner outlived the
// owner altogether when a handle was unacknowledged, and a group kill took the spawner with the owner.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/die-starting.mjs', import.meta.url));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) kill(-c.pid!);
});

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/** A process's parent pid and the start of that parent's command line (what a failure report needs). */
function parentOf(stat: string): string {
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  try {
    return `${ppid} ${readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').join(' ').slice(0, 60)}`;
  } catch {
    return `${ppid} (gone)`;
  }
}

/**
 * Live (not zombie) processes whose command line names `needles` (a workspace path, the sleep marker), each
 * with its parent: a bubblewrap whose parent is still the spawner says the spawner missed the owner's death;
 * one under pid 1, that the spawner died without killing it.
 */
function survivors(
  needles: readonly string[],
  except: number,
): { pid: number; line: string; parent: string }[] {
  const found: { pid: number; line: string; parent: string }[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === except || pid === process.pid) continue;
    try {
      const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (!needles.some((n) => line.includes(n))) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue; // dead, waiting to be reaped
      found.push({ pid, line: line.slice(0, 120), parent: parentOf(stat) });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * The child's output from its start: `printed(text)` resolves once its stdout so far holds `text` — also when
 * that came before the call (a second line can arrive in the same chunk as the first) — and rejects, with its
 * stderr, if it exits first.
 */
function output(child: ChildProcess): { printed(text: string): Promise<void>; stderr(): string } {
  let out = '';
  let err = '';
  let exited = false;
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters) w();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  child.once('exit', () => {
    exited = true;
    for (const w of waiters) w();
  });
  return {
    stderr: () => err,
    printed: (text) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (out.includes(text)) resolve();
          else if (exited) reject(new Error(`exited before "${text}": ${err}`));
          else return;
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      }),
  };
}

const ways = ['exit', 'throw', 'kill', 'terminate'] as const;
const programs = ['auto', 'node', 'inline'] as const;

// Inline spawns (`spawner: 'inline'`) are the owner's own children: an exit hook kills them — not on a SIGKILL
// or a worker's terminate(), which run no JavaScript (README).
describe.each([
  ['auto', ways],
  ['node', ways],
  ['inline', ['exit', 'throw'] as const],
] as const)("the owner's death (spawner program %s)", (program, programWays) => {
  it.each(programWays)(
    'leaves no bubblewrap and no sandboxed process when it dies by %s mid-start',
    async (way) => {
      requireBwrap();
      expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
      const stateDir = join(tempDir(), 'state');
      const marker = `8${process.pid % 1000}${ways.indexOf(way)}${programs.indexOf(program)}.5`;
      // Its own process group (the test kills the group for `kill`), as a supervisor would start it.
      const child = spawn(process.execPath, [fixture, stateDir, way, marker, program], {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      children.push(child);
      const said = output(child);
      const exited = new Promise((r) => child.once('exit', r));
      await said.printed('starting');
      if (way === 'kill') kill(-child.pid!);
      if (way === 'terminate')
        await said.printed('terminated'); // the worker ended, its process lives on
      else await exited;
      if (way === 'throw') expect(said.stderr()).toContain('the owner failed');

      const needles = [stateDir, marker];
      try {
        await expect
          .poll(() => survivors(needles, way === 'terminate' ? child.pid! : -1), {
            timeout: 20_000,
            interval: 200,
          })
          .toEqual([]);
      } finally {
        // Failed or not: nothing of it stays running, and it is gone before its cgroups are reaped.
        for (const s of survivors(needles, way === 'terminate' ? child.pid! : -1)) kill(s.pid);
        if (way === 'terminate') {
          kill(-child.pid!);
          await exited; // listened for from the start: an exit before this point is not missed
        }
        await expect.poll(() => survivors(needles, -1), { timeout: 20_000, interval: 200 }).toEqual([]);
        // What the dead owner left (label files, workspaces, cgroups, scaffolds) is reaped.
        await makeDriver({ stateDir }).reap({ labels: {} });
      }
    },
  );
});
