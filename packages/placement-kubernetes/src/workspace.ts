// Snapshot and restore through exec: the pod's `tar -cf - .` of the workspace, re-encoded with the
// contract's deterministic tar (so the address is what any driver gives the same tree); restore verifies
// the snapshot before touching the workspace, then empties it and unpacks the canonical bytes.
import {
  canonicalTar,
  PlacementError,
  type Snapshot,
  snapshotAddress,
  utf8,
  verifiedSnapshotEntries,
} from '@everdict/placement';
import { runInternal, type SandboxTarget } from './sandbox-exec.js';
import { directoriesCommand, restoreCommand, SNAPSHOT_COMMAND } from './sandbox-scripts.js';

export async function snapshotWorkspace(target: SandboxTarget, maxBytes: number): Promise<Snapshot> {
  const { exitCode, stdout, stderr } = await runInternal(target, SNAPSHOT_COMMAND, undefined, maxBytes);
  if (stdout.truncated)
    throw new PlacementError('output_capped', `the workspace archive passed ${maxBytes} bytes`, { maxBytes });
  if (exitCode !== 0) {
    throw new PlacementError(
      'spawn_failed',
      `tar of the workspace failed (${exitCode}): ${utf8(stderr.bytes()).trim()}`,
      { exitCode },
    );
  }
  const bytes = await canonicalTar(stdout.bytes(), { skipSpecial: true });
  return { address: snapshotAddress(bytes), bytes };
}

export async function restoreWorkspace(target: SandboxTarget, snapshot: Snapshot): Promise<void> {
  await verifiedSnapshotEntries(snapshot);
  const { exitCode, stderr } = await runInternal(
    target,
    restoreCommand(snapshot.bytes.byteLength),
    snapshot.bytes,
    64 * 1024,
  );
  if (exitCode !== 0) {
    throw new PlacementError(
      'spawn_failed',
      `unpacking the snapshot failed (${exitCode}): ${utf8(stderr.bytes()).trim()}`,
      { exitCode },
    );
  }
}

/** Makes a new sandbox's `directories` (ProvisionSpec) in its workspace: one exec, before any command. */
export async function makeDirectories(target: SandboxTarget, paths: readonly string[]): Promise<void> {
  const { exitCode, stderr } = await runInternal(target, directoriesCommand(paths), undefined, 64 * 1024);
  if (exitCode !== 0) {
    throw new PlacementError(
      'spawn_failed',
      `the workspace directories could not be made (${exitCode}): ${utf8(stderr.bytes()).trim()}`,
      { exitCode },
    );
  }
}
