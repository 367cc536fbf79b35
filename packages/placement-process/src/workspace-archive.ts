// A snapshot of a live workspace is read from inside a sandbox, as the sandbox user: GNU tar runs in a
// fresh bubblewrap sandbox (the host's system directories, the workspace bound read-only) and its output
// is re-packed into the canonical archive. Reading the workspace as root from the host instead would let
// a command still running in the sandbox swap a directory for a symlink mid-walk and have root read host
// files into the snapshot; from inside, a symlink can only lead to what the sandbox itself can see.
import { spawn } from 'node:child_process';
import { canonicalTar, PlacementError, type Snapshot, snapshotAddress, writeTar } from '@everdict/placement';
import { HOST_ENV, sandboxArgs, WORKSPACE } from './bwrap-args.js';
import { readableDirectoryEntries } from './workspace-directories.js';

export interface ArchiveSetup {
  readonly bwrap: string;
  readonly user: { readonly uid: number; readonly gid: number } | null;
  /** Past this many archive bytes the archiver is stopped: `output_capped` (default: no bound, tests). */
  readonly capBytes?: number;
}

/**
 * The canonical snapshot of a sandbox's workspace. `idle` (nothing runs in the sandbox) and a workspace of
 * directories only: the same archive, read here without a second bubblewrap start (workspace-directories.ts);
 * otherwise `archiveWorkspace`.
 */
export async function snapshotWorkspace(
  setup: ArchiveSetup,
  workspace: string,
  idle: boolean,
): Promise<Snapshot> {
  const directories = idle ? readableDirectoryEntries(workspace, setup.user) : null;
  if (directories !== null) {
    const bytes = await writeTar(directories);
    return { address: snapshotAddress(bytes), bytes };
  }
  return archiveWorkspace(setup, workspace);
}

/** The canonical snapshot of `workspace`, read by `tar` inside a read-only sandbox as the sandbox user. */
export async function archiveWorkspace(setup: ArchiveSetup, workspace: string): Promise<Snapshot> {
  const args = sandboxArgs({ kind: 'default', ref: 'default', digest: null }, workspace, 'none');
  const bind = args.lastIndexOf('--bind');
  args[bind] = '--ro-bind';
  const child = spawn(
    setup.bwrap,
    [...args, '--clearenv', '--chdir', WORKSPACE, '--', 'tar', '-C', WORKSPACE, '-cf', '-', '.'],
    { detached: true, env: HOST_ENV, stdio: ['ignore', 'pipe', 'pipe'], ...(setup.user ?? {}) },
  );
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const capBytes = setup.capBytes ?? Number.POSITIVE_INFINITY;
  let size = 0;
  let capped = false;
  child.stdout.on('data', (c: Buffer) => {
    size += c.byteLength;
    if (size <= capBytes) out.push(c);
    else if (!capped) {
      capped = true;
      out.length = 0;
      try {
        process.kill(-child.pid!, 'SIGKILL'); // bubblewrap's process group (detached), its namespace with it
      } catch {
        // already gone
      }
    }
  });
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  }).catch((e: Error) => {
    throw new PlacementError('spawn_failed', `could not start the archiver: ${e.message}`);
  });
  if (capped) {
    throw new PlacementError('output_capped', `the workspace's archive passed ${capBytes} bytes`, {
      capBytes,
    });
  }
  if (code !== 0) {
    throw new PlacementError('spawn_failed', `the workspace could not be archived (tar exit ${code})`, {
      stderr: Buffer.concat(err).toString('utf8').slice(0, 2000),
    });
  }
  const bytes = await canonicalTar(Buffer.concat(out), { skipSpecial: true });
  return { address: snapshotAddress(bytes), bytes };
}
