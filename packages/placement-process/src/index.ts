// @everdict/placement-process — the process rung of the placement ladder: bubblewrap sandboxes with
// cgroup (v2 or v1) or rlimit limits, named root-filesystem images, label files that `reap` reads.
export { DEFAULT_PATH, sandboxArgs, WORKSPACE } from './bwrap-args.js';
export {
  IMAGE_NAME,
  type ImportedImage,
  imageDigest,
  importImage,
  type ResolvedImage,
  resolveImage,
} from './images.js';
export { cgroupMounts, detectLimits } from './limits/detect.js';
export type { LimitBackend, LimitCounters, MeasuredUsage, SandboxLimits } from './limits/limits.js';
export { PROCESS_DRIVER, ProcessDriver, type Sandbox } from './process-driver.js';
export {
  LimitsMode,
  ProcessDriverConfig,
  type ProcessDriverConfigInput,
  type ProcessDriverWarning,
  type ProcessDriverWarningListener,
} from './process-driver-config.js';
export { layout, listRecords, ownerAlive, SandboxRecord } from './sandbox-state.js';
