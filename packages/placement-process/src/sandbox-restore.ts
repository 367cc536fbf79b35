// Restore and dispose of a held sandbox, and how the two meet: a restore that a dispose overtakes answers
// `gone` and leaves nothing, and a dispose of a sandbox restored here (or adopted, or held only by its label
// file) also removes what restores left beside its workspace. What a removal does is sandbox-removal.ts.
import {
  PlacementError,
  removeTreeNoFollow,
  restoreDirectory,
  type Snapshot,
  type WriteTreeOptions,
} from '@everdict/placement';
import type { Sandbox } from './held-sandbox.js';
import type { LimitBackend } from './limits/limits.js';
import { removeRestoreLeftovers, removeSandbox } from './sandbox-removal.js';
import { readRecord, type StateLayout } from './sandbox-state.js';

/** What a dispose needs of its driver: the state layout and the sandboxes it holds (by id). */
export interface HeldSandboxes {
  state(): Promise<StateLayout>;
  readonly held: Map<string, Sandbox>;
}

/**
 * Replaces a held sandbox's workspace with `snapshot` (restoreDirectory). A dispose that overtakes it answers
 * `gone` and leaves nothing: not a raw ENOENT from its workspace removed under it, nor a workspace swapped
 * back in after the removal (the label file is gone: nothing else would ever remove it).
 */
export async function restoreWorkspace(
  box: Sandbox,
  snapshot: Snapshot,
  options: WriteTreeOptions,
): Promise<void> {
  const { id } = box.record.handle;
  const gone = () => new PlacementError('gone', `sandbox ${id} was disposed during the restore`, { id });
  box.restored = true; // a dispose from now on also removes what this restore may leave beside the workspace
  try {
    await restoreDirectory(box.record.workspace, snapshot, options);
  } catch (e) {
    if (box.disposed) throw gone();
    throw e;
  }
  if (box.disposed) {
    await box.removal;
    await removeTreeNoFollow(box.record.workspace);
    await removeRestoreLeftovers(box.record.workspace);
    throw gone();
  }
}

/**
 * Disposes a sandbox the driver holds, once: its handle is `gone` from now on, and `box.removal` settles
 * when it is removed and no longer held. Returns what was removed (removeSandbox); nothing the second time.
 */
export async function disposeHeld(driver: HeldSandboxes, box: Sandbox): Promise<string[]> {
  if (box.disposed) return [];
  box.disposed = true;
  const removal = removeHeld(driver, box);
  box.removal = removal.then(
    () => undefined,
    () => undefined,
  );
  return removal;
}

async function removeHeld(driver: HeldSandboxes, box: Sandbox): Promise<string[]> {
  box.log.close();
  for (const c of box.running) c.kill({ kind: 'gone' });
  // Restore leftovers are looked for (a listing of the workspaces' directory) only after a restore here, or
  // for an adopted sandbox (another instance may have restored it): none otherwise.
  const removed = await removeSandbox(await driver.state(), box.record, box.limits, {
    made: box.made,
    leftovers: box.restored || !box.created,
    ...(box.created ? { logWritten: box.log.touched } : {}),
  });
  await Promise.all([...box.running].map((c) => c.exited));
  driver.held.delete(box.record.handle.id);
  return removed;
}

/**
 * Disposes a sandbox the driver does not hold, from its label file (none: nothing to do). What restores
 * another instance made may be beside the workspace: they go too.
 */
export async function disposeUnheld(l: StateLayout, id: string, backend: LimitBackend): Promise<void> {
  const record = await readRecord(l, id);
  if (record)
    await removeSandbox(l, record, backend.open(record.limits.paths, record.handle.limits), {
      leftovers: true,
    });
}
