// @everdict/trajectory-store — owned, sealed trajectories and run artifacts over an object store.
export type { AppendResult } from './append.js';
export {
  type ArtifactSweep,
  type ArtifactSweepOptions,
  sweepArtifacts,
} from './artifact-sweep.js';
export {
  type ArtifactEntry,
  ArtifactPath,
  discardStaged,
  placeArtifact,
  putArtifact,
  putArtifactsFromDir,
  readArtifact,
  readArtifactBytes,
  type StagedArtifact,
  stageArtifact,
  toArtifactRef,
} from './artifacts.js';
export type { ObjectBackend, ObjectInfo, PutStreamResult } from './backend.js';
export { canonicalJson, canonicalJsonl, canonicalLine } from './canonical.js';
export { type Digest, digestOf, isDigest, StreamingDigest } from './digest.js';
export { backendFromEnv, type StoreEnv } from './env.js';
export {
  isTrajectoryStoreError,
  TRAJECTORY_ERROR_STATUS,
  type TrajectoryErrorCode,
  TrajectoryStoreError,
} from './errors.js';
export type { TraceEventDraft } from './events.js';
export {
  getImported,
  type ImportInput,
  importedTrajectoryId,
  importTrajectory,
  listImported,
  type PreparedImport,
  prepareImport,
  writeImport,
} from './imports.js';
export { LocalBackend, localBackend } from './local/local-backend.js';
export { LocalBackendConfig } from './local/local-backend-config.js';
export * from './otlp/index.js';
export * from './pull/index.js';
export type { Page, Verification } from './read.js';
export {
  DeletionRecord,
  ImportedTrajectory,
  Provenance,
  SealBlock,
  SealRecord,
} from './records.js';
export {
  applyRetention,
  type RetentionCandidate,
  type RetentionOptions,
  RetentionPolicy,
  type RetentionVerdict,
  retentionVerdict,
} from './retention.js';
export type { S3Backend } from './s3/s3-backend.js';
export { S3BackendConfig } from './s3/s3-backend-config.js';
export { s3Backend } from './s3/s3-lazy.js';
export type {
  Sealed,
  TailItem,
  TrajectoryHead,
  TrajectoryPage,
  TrajectoryStoreOptions,
} from './store-types.js';
export { TrajectoryStore, toTrajectoryRef } from './trajectory-store.js';
