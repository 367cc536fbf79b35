// A sandbox this driver holds, and how one is held from its label file (made here or adopted): its image, log
// and bubblewrap arguments follow from the record alone.
import { sandboxArgs } from './bwrap-args.js';
import type { SandboxLimits } from './limits/limits.js';
import type { SandboxCommand } from './sandbox-command.js';
import { SandboxLog } from './sandbox-log.js';
import type { SandboxRecord } from './sandbox-state.js';

/** A sandbox this driver holds: its record, limits, log, bubblewrap arguments and running commands. */
export interface Sandbox {
  readonly record: SandboxRecord;
  readonly limits: SandboxLimits;
  readonly log: SandboxLog;
  readonly args: readonly string[];
  readonly running: Set<SandboxCommand>;
  /** Namespace inits (host pids) of ended commands not yet seen finish exiting (run-commands.ts `settled`). */
  readonly ending: Set<number>;
  disposed: boolean;
  /** Settles once a dispose begun (`disposed`) has removed it and it is no longer held. */
  removal: Promise<void> | null;
  /** Made by this process (not adopted): its log did not exist before this process wrote to it. */
  readonly created: boolean;
  /** The spec's directories this process made in the workspace, parents first (removal-hint). */
  made: readonly string[];
  /** A restore was begun here: its dispose also removes what restores left beside the workspace. */
  restored: boolean;
}

/** The sandbox of `record` with `limits`: `created` by this process, or adopted (its log counts what is there). */
export function heldSandbox(
  record: SandboxRecord,
  limits: SandboxLimits,
  logCapBytes: number,
  created: boolean,
): Sandbox {
  const image =
    record.imageRoot === null
      ? ({ kind: 'default', ref: 'default', digest: null } as const)
      : ({
          kind: 'named',
          ref: record.handle.environment.image,
          root: record.imageRoot,
          digest: record.handle.environment.imageDigest ?? '',
        } as const);
  return {
    record,
    limits,
    // adopted: the log another instance wrote counts against the cap
    log: new SandboxLog(record.log, logCapBytes, !created),
    args: sandboxArgs(image, record.workspace, record.handle.network),
    running: new Set(),
    ending: new Set(),
    disposed: false,
    removal: null,
    created,
    made: [],
    restored: false,
  };
}

/**
 * Idle: nothing runs in the sandbox (a snapshot or `files` may then read its workspace from the host). A task
 * that has begun to exit does not count: right after a command ended its namespace's init is often still in the
 * cgroups, tearing the namespaces down (≈ 1 in 3 runs here), and can no longer touch the workspace.
 */
export async function isIdle(box: Sandbox): Promise<boolean> {
  return box.running.size === 0 && !(await box.limits.active());
}
