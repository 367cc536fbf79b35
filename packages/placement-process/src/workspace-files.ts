// `files` of the process driver: the regular files under a workspace directory, streamed out of GNU tar
// running in a fresh read-only bubblewrap sandbox as the sandbox user (as a snapshot is read, and for the same
// reason: a command still running cannot have root follow its symlinks; workspace-archive.ts), by name. Hard links are
// archived as the files they are (`--hard-dereference`). An idle sandbox whose directory holds directories
// only — a command that wrote no file — answers none without starting bubblewrap.
import { spawn } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { PlacementError, type WorkspaceArchive } from '@everdict/placement';
import { HOST_ENV, sandboxArgs, WORKSPACE } from './bwrap-args.js';
import type { ArchiveSetup } from './workspace-archive.js';
import { readableDirectoryEntries } from './workspace-directories.js';

/** The archive is skipped: `dir` is absent, not a directory, or (idle) holds directories only. */
export function nothingUnder(
  workspace: string,
  dir: string,
  owner: ArchiveSetup['user'],
  idle: boolean,
): boolean {
  if (!idle) return false;
  const path = join(workspace, dir);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch {
    return true;
  }
  return !st.isDirectory() || readableDirectoryEntries(path, owner) !== null;
}

/** `tar -cf - .` in `dir` of the workspace, run in a read-only sandbox; an absent `dir` (or a symlink) archives nothing. */
export function archiveDirectory(setup: ArchiveSetup, workspace: string, dir: string): WorkspaceArchive {
  const args = sandboxArgs({ kind: 'default', ref: 'default', digest: null }, workspace, 'none');
  const bind = args.lastIndexOf('--bind');
  args[bind] = '--ro-bind';
  const script =
    '[ -d "$1" ] && [ ! -L "$1" ] || exit 0; cd -- "$1" && exec tar --sort=name --hard-dereference -cf - .';
  const child = spawn(
    setup.bwrap,
    [...args, '--clearenv', '--chdir', WORKSPACE, '--', 'sh', '-c', script, 'sh', dir],
    { detached: true, env: HOST_ENV, stdio: ['ignore', 'pipe', 'pipe'], ...(setup.user ?? {}) },
  );
  const err: Buffer[] = [];
  let errBytes = 0;
  child.stderr.on('data', (c: Buffer) => {
    if (errBytes < 4096) err.push(c);
    errBytes += c.byteLength;
  });
  let stopped = false;
  const done = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  }).then(
    (code) => {
      if (code === 0 || stopped) return;
      const stderr = Buffer.concat(err).toString('utf8');
      // tar names what it could not read on its first line ("tar: ./x: Cannot open: Permission denied").
      const first = stderr.split('\n')[0]?.trim().slice(0, 300) ?? '';
      throw new PlacementError(
        'spawn_failed',
        `the workspace's ${dir}/ could not be archived (tar exit ${code})${first ? `: ${first}` : ''}`,
        { stderr: stderr.slice(0, 2000) },
      );
    },
    (e: Error) => {
      throw new PlacementError('spawn_failed', `could not start the archiver: ${e.message}`);
    },
  );
  return {
    stream: child.stdout,
    done,
    stop() {
      stopped = true;
      try {
        process.kill(-child.pid!, 'SIGKILL'); // bubblewrap's process group (detached), its namespace with it
      } catch {
        // already gone
      }
    },
  };
}
