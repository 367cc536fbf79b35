// The Driver contract: one interface every rung of the placement ladder implements (inline, process,
// kubernetes), held to one contract suite (`@everdict/placement/contract`). Inputs are parsed with the
// zod schemas of spec.ts / exec.ts; every refusal is a PlacementError with one of ten codes.
import type {
  Command,
  ExecOptionsInput,
  ExecResult,
  ExecStream,
  LogOptionsInput,
  StreamOptionsInput,
} from './exec.js';
import type { Capacity, DriverDescription, ReapedSandbox, SandboxUsage } from './observe.js';
import type { LabelSelector, ProvisionSpecInput, SandboxHandle, Snapshot } from './spec.js';
import type { WorkspaceFile } from './workspace-files.js';

export interface Driver {
  /** Which driver this is and which optional operations it supports. Never throws. */
  describe(): DriverDescription;

  /**
   * A sandbox for one run: root filesystem from `spec.image`, an empty (or `spec.workspace`-seeded)
   * private workspace holding `spec.directories`, env, limits, network grant, labels. Idempotent per (tenant, run id): asking again
   * returns the existing sandbox's handle (the first spec wins). `image_not_found`, `capacity`, `spawn_failed`.
   */
  provision(spec: ProvisionSpecInput): Promise<SandboxHandle>;

  /** Runs `cmd` to completion. A non-zero exit is a result. `timeout`, `output_capped`, `oom`, `pids_exhausted`, `gone`, `spawn_failed`. */
  exec(handle: SandboxHandle, cmd: Command, options?: ExecOptionsInput): Promise<ExecResult>;

  /** Starts `cmd` with live stdin/stdout/stderr, for terminals (see describe().capabilities.pty). */
  stream(handle: SandboxHandle, cmd: Command, options?: StreamOptionsInput): Promise<ExecStream>;

  /** What the sandbox's commands printed (stdout and stderr interleaved as written); `follow` keeps tailing until dispose. */
  logs(handle: SandboxHandle, options?: LogOptionsInput): AsyncIterable<Uint8Array>;

  /** The workspace as a deterministic POSIX tar with its BLAKE3 address. */
  snapshot(handle: SandboxHandle): Promise<Snapshot>;

  /**
   * The regular files under the workspace directory `dir` (`WorkspaceDir`), read from inside the sandbox and
   * streamed one at a time: never the whole set in memory. No such directory: none. A consumer that stops early
   * stops the reading. `unsupported` where the driver has no filesystem (capabilities.snapshot false).
   */
  files(handle: SandboxHandle, dir: string): AsyncIterable<WorkspaceFile>;

  /** Replaces the workspace with a snapshot; `snapshot_mismatch` (workspace untouched) if its bytes do not hash to its address. */
  restore(handle: SandboxHandle, snapshot: Snapshot): Promise<void>;

  /** CPU time, peak memory and wall time so far, as measured (unmeasurable figures are null). */
  usage(handle: SandboxHandle): Promise<SandboxUsage>;

  /** Kills everything the sandbox runs and removes all it holds. Idempotent: a second call (or an unknown handle) resolves. */
  dispose(handle: SandboxHandle): Promise<void>;

  /**
   * Finds sandboxes matching `labels` that no live driver instance owns (left by a crash) and disposes
   * them; returns what it removed. Sandboxes this instance holds are never reaped.
   */
  reap(selector: { labels: LabelSelector }): Promise<ReapedSandbox[]>;

  /** Slots free and total, and the limit mechanism in force. */
  capacity(): Promise<Capacity>;
}
