// @everdict/runrecord — durable run records (`sandbox.runrecord/1`): chain, host appends, verification,
// wire form, accounts, idle energy, attestations, the attestation bundle and its Ed25519 signatures.
export { type AccountVerdict, type AccountVerdictName, AccountWalker, accountVerdict } from './accounts.js';
export type { RecordCost } from './attest-rules.js';
export {
  ATTESTATION_TAG,
  type Attestation,
  type AttestationBody,
  type AttestationSignature,
  type AttestationStore,
  attestationAddress,
  attestationBytes,
  buildAttestation,
  MemoryAttestationStore,
  type Outcome,
} from './attestation.js';
export { type AuditChainResult, auditChainInput, verifyAuditChain } from './audit-chain.js';
export {
  type BundleInput,
  decodeAttestationBody,
  encodeAttestationBody,
  encodeBundle,
  type WireAttestation,
  type WireAttestationSignature,
  type WireAttestations,
} from './bundle.js';
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
  type AttestedInterval,
  type ExecuteInput,
  type ExecuteIntervalOptions,
  type IntervalReceipt,
  type Operation,
  openWriter,
  type RecordIdentity,
  RecordWriter,
  type ResumeInput,
  type SuspendInput,
} from './host.js';
export { HostRecord, openRecord, reopenRecord } from './host-record.js';
export { type BuildResult, buildRecord, parseOperation } from './ops.js';
export { segmentBytes } from './segment.js';
export {
  generateSigningKey,
  parseTrustKey,
  publicKeyOf,
  SIGNATURE_TAG,
  type SigningKey,
  signAddress,
  signAttestation,
  signatureMessage,
  verifyAddressSignature,
} from './signature.js';
export { type SnapshotForm, sameSnapshot, snapshotForm } from './snapshot.js';
export { type CostJson, costToJson, type VerifyOutput, verifyOutput } from './summary.js';
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
export {
  type FinishOptions,
  Verifier,
  type VerifierOptions,
  type VerifyOptions,
  type VerifyResult,
  verifyRecord,
  verifyWire,
} from './verify.js';
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
