// @everdict/placement — the Driver contract of the placement ladder (inline → process → kubernetes), its
// zod schemas, the one error class, the shared bytes (deterministic tar, BLAKE3 addresses), the
// placement mapping onto run-model, and the inline driver. The contract suite is '@everdict/placement/contract'.

export { blake3Hex, canonicalJson, environmentManifest, environmentOf, snapshotAddress } from './address.js';
export {
  type CommandBudget,
  commandBudget,
  MAX_TIMER_MS,
  timeoutError,
  wallTimer,
} from './deadline.js';
export type { Driver } from './driver.js';
export {
  httpStatusOf,
  isLimitStop,
  isPlacementError,
  LIMIT_STOP_CODES,
  type LimitStop,
  PLACEMENT_ERROR_CODES,
  PlacementError,
  type PlacementErrorCode,
  type ProgramExitCode,
  programExitOf,
  programNotStarted,
  unsupported,
} from './errors.js';
export {
  Command,
  DEFAULT_OUTPUT_CAP_BYTES,
  ExecOptions,
  type ExecOptionsInput,
  ExecResult,
  type ExecStream,
  ExecTiming,
  LogOptions,
  type LogOptionsInput,
  parseCommand,
  type StreamExit,
  StreamOptions,
  type StreamOptionsInput,
  TerminalSize,
} from './exec.js';
export { matchesLabels, sandboxId } from './ids.js';
export {
  INLINE_DRIVER,
  type InlineCall,
  InlineDriver,
  type InlineDriverOptions,
  type InlineFunction,
  type InlineOutput,
} from './inline/inline-driver.js';
export {
  Capabilities,
  Capacity,
  DriverDescription,
  EVERY_CAPABILITY,
  LimitMechanism,
  ReapedSandbox,
  SandboxUsage,
} from './observe.js';
export { CappedOutput, toBytes, utf8 } from './output.js';
export { placementOf, type Rung, rungFor } from './placement-map.js';
export { removeTreeNoFollow } from './remove-tree.js';
export * from './session-channel.js';
export { restoreDirectory, snapshotDirectory, verifiedSnapshotEntries } from './snapshot.js';
export {
  Bytes,
  DEFAULT_LIMITS,
  DriverName,
  Env,
  Environment,
  LabelSelector,
  Labels,
  MAX_WALL_TIMEOUT_MS,
  MAX_WORKSPACE_DIRECTORIES,
  NetworkGrant,
  ProvisionSpec,
  type ProvisionSpecInput,
  parseHandle,
  parseProvisionSpec,
  ResourceLimits,
  type ResourceLimitsInput,
  SandboxHandle,
  Snapshot,
  WorkspacePath,
} from './spec.js';
export {
  type FileBytes,
  PIECE_BYTES,
  READ_AHEAD,
  type StreamedFile,
  streamedTarLength,
  streamTar,
} from './tar/streaming-tar.js';
export { comparePaths, MODE_MASK, normalizeEntryPath, sortEntries, type TarEntry } from './tar/tar-entry.js';
export { canonicalTar, isCanonicalTar, type ReadTarOptions, readTar } from './tar/tar-reader.js';
export { writeTar } from './tar/tar-writer.js';
export { isDirectory, readTree, type WriteTreeOptions, writeTree } from './tar/tree.js';
export {
  filesOfArchive,
  refusedFiles,
  type WorkspaceArchive,
  WorkspaceDir,
  type WorkspaceFile,
} from './workspace-files.js';
