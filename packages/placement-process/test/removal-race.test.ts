// The workspace removal's race, made deterministic: an entry the removal listed as a directory is swapped
// for a symlink to a host directory before its rmdir (what a command that survived the kill can do at any
// moment; test/review2-dispose-nofollow.test.ts races it for real). The swap happens right after the
// listing: `readdir` is the real one, and the test exchanges the two entries once it has answered. The
// removal must finish — remove the whole workspace, the swapped-in symlink included — and leave the host
// directory's files alone.
import { existsSync, mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { removeTree } from '../src/sandbox-removal.js';
import { tempDir } from './helpers.js';

/** Called after each real readdir of `path` (none: nothing happens). */
const hook = vi.hoisted(() => ({ afterReaddir: null as ((path: string) => void) | null }));

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const readdir = (async (...args: Parameters<typeof real.readdir>) => {
    const listed = await real.readdir(...args);
    hook.afterReaddir?.(String(args[0]));
    return listed;
  }) as typeof real.readdir;
  return { ...real, default: { ...real, readdir }, readdir };
});

/** Exchanges the names `a` and `b` in `dir` (three renames: the swapper's RENAME_EXCHANGE, unhurried). */
function exchange(dir: string, a: string, b: string): void {
  renameSync(join(dir, a), join(dir, '.swap'));
  renameSync(join(dir, b), join(dir, a));
  renameSync(join(dir, '.swap'), join(dir, b));
}

describe('workspace removal racing a swap', () => {
  it('removes everything when a directory it listed is a symlink to a host directory at its rmdir', async () => {
    const host = join(tempDir('everdict-host-'), 'precious');
    mkdirSync(host);
    for (const name of ['a', 'b', 'c']) writeFileSync(join(host, name), 'host file\n');
    const workspace = join(tempDir(), 'ws');
    mkdirSync(workspace);
    mkdirSync(join(workspace, 'out')); // empty: the few-empty-directories path lists it as a directory
    symlinkSync(host, join(workspace, 'out.link'));
    let swaps = 0;
    hook.afterReaddir = (path) => {
      if (path !== workspace || swaps++ > 0) return;
      exchange(workspace, 'out', 'out.link'); // `out` is the symlink now, `out.link` the directory
    };
    try {
      expect(await removeTree(workspace)).toBe(true);
    } finally {
      hook.afterReaddir = null;
    }
    expect(swaps).toBeGreaterThan(0); // the swap happened between the listing and the rmdir
    expect(existsSync(workspace)).toBe(false);
    expect(readdirSync(host).sort()).toEqual(['a', 'b', 'c']);
  });

  it('removes everything when a directory with files it listed is a symlink to a host directory at its rmdir', async () => {
    const host = join(tempDir('everdict-host-'), 'precious');
    mkdirSync(host);
    for (const name of ['a', 'b', 'c']) writeFileSync(join(host, name), 'host file\n');
    const workspace = join(tempDir(), 'ws');
    mkdirSync(join(workspace, 'd'), { recursive: true });
    for (const name of ['a', 'b', 'c']) writeFileSync(join(workspace, 'd', name), 'workspace file\n');
    symlinkSync(host, join(workspace, 'd.link'));
    let swaps = 0;
    hook.afterReaddir = (path) => {
      if (path !== workspace || swaps++ > 0) return;
      exchange(workspace, 'd', 'd.link');
    };
    try {
      expect(await removeTree(workspace)).toBe(true);
    } finally {
      hook.afterReaddir = null;
    }
    expect(swaps).toBeGreaterThan(0);
    expect(existsSync(workspace)).toBe(false);
    expect(readdirSync(host).sort()).toEqual(['a', 'b', 'c']);
  });
});
