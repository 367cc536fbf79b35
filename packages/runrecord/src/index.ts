// @everdict/runrecord — durable run records (`sandbox.runrecord/1`): chain, host appends, verification,
// wire form, accounts, idle energy and attestations.
export { type AccountVerdict, type AccountVerdictName, AccountWalker, accountVerdict } from './accounts.js';
export {
  ATTESTATION_TAG,
  type Attestation,
  type AttestationStore,
  attestationAddress,
  attestationBytes,
  buildAttestation,
  MemoryAttestationStore,
  type Outcome,
} from './attestation.js';
export { bytesToHex, type Hex, hexToBytes, isAddr, U64_MAX } from './bytes.js';
export { genesisHead, nextHead } from './chain.js';
export { idleEnergy, type RunCost, runCost, type UnresolvedAttestation } from './energy.js';
export {
  isRunRecordError,
  isSpecErrorCode,
  PACKAGE_ERROR_CODES,
  type PackageErrorCode,
  RunRecordError,
  type RunRecordErrorCode,
  SPEC_ERROR_CODES,
  type SpecErrorCode,
} from './errors.js';
export {
  availableHashBackends,
  blake3,
  blake3With,
  type HashBackendName,
  hashBackend,
  setHashBackend,
} from './hash.js';
export {
  type ExecuteInput,
  HostRecord,
  type Operation,
  openRecord,
  openWriter,
  type RecordIdentity,
  RecordWriter,
  type ResumeInput,
  reopenRecord,
  type SuspendInput,
} from './host.js';
export { type BuildResult, buildRecord, parseOperation } from './ops.js';
export { segmentBytes } from './segment.js';
export { type SnapshotForm, sameSnapshot, snapshotForm } from './snapshot.js';
export {
  type Account,
  type ClosedBody,
  type CloseReason,
  type ExecutedBody,
  FORMAT,
  type IdleProvenance,
  type ImageSnapshot,
  type Phase,
  type ResumedBody,
  type RunRecord,
  type Segment,
  type SegmentBody,
  type SegmentKind,
  type SnapshotInput,
  type SnapshotRef,
  type SuspendedBody,
  type TranscriptSnapshot,
} from './types.js';
export { type FinishOptions, Verifier, type VerifyResult, verifyRecord, verifyWire } from './verify.js';
export {
  decodeSegment,
  decodeWire,
  decodeWireJson,
  encodeSegment,
  encodeWire,
  type WireAccount,
  type WireRecord,
  type WireSegment,
  type WireSnapshot,
} from './wire.js';
