// @everdict/headlog — a transparency log of run-record heads (`everdict.headlog/1`): RFC 9162 Merkle
// trees with BLAKE3, leaves, proofs, signed tree heads, witness cosignatures and a reader's verdicts.
// Pure: no I/O. Storage is the caller's, through `CompactRange` (appends) and proof plans (reads).
export { readAnswer } from './answer.js';
export { bytesToHex, type Hex, isHashHex, parseHash, parseHex } from './bytes.js';
export {
  consistencyInput,
  consistencyProofObject,
  inclusionInput,
  inclusionProofObject,
  isLogCommand,
  LOG_COMMANDS,
  type LogCommand,
  type LogCommandOutput,
  type LogCommandResult,
  logRootInput,
  runLogCommand,
} from './commands.js';
export { CompactRange, foldRight, type StoredNode } from './compact-range.js';
export { COSIGN_TAG, HASH_SIZE, LEAF_SIZE, LEAF_TAG, STH_TAG, TREE_HEAD_SIZE } from './constants.js';
export {
  HeadLogError,
  type HeadLogErrorCode,
  isHeadLogError,
  isProofErrorCode,
  OBJECT_ERROR_CODES,
  type ObjectErrorCode,
  PROOF_ERROR_CODES,
  type ProofErrorCode,
  READER_ERROR_CODES,
  type ReaderErrorCode,
} from './errors.js';
export { blake3, emptyRoot, type HashBackendName, hashBackend, leafHash, nodeHash } from './hash.js';
export {
  decodeLeaf,
  encodeLeaf,
  type HeadLeaf,
  idHash,
  isLeafBytes,
  leafFor,
  type SegmentHead,
} from './leaf.js';
export { MemoryTree, treeRoot } from './memory-tree.js';
export {
  type NodeReader,
  type ProofPlan,
  planConsistencyProof,
  planInclusionProof,
  planRoot,
  runPlan,
} from './plan.js';
export {
  type GroupReport,
  type IndexedLeaf,
  type LoggedLeafProof,
  leafHashHex,
  type ServedRecord,
  verifyGroupReport,
  verifyLoggedLeaves,
  verifyServedRecord,
} from './reader.js';
export {
  consistencyProofLength,
  consistencySpans,
  frontierNodes,
  inclusionPathLength,
  inclusionSpans,
  type NodeId,
  type Span,
  spanNodes,
  splitPoint,
} from './shape.js';
export { generateKeyPair, type KeyPair, keyPairFromSeed, sign, verifySignature } from './signing.js';
export {
  type Cosignature,
  cosignatureSchema,
  cosignTreeHead,
  countWitnesses,
  decodeTreeHead,
  encodeTreeHead,
  logIdOf,
  parseTreeHeadJson,
  requireWitnesses,
  type SignedTreeHead,
  type SignedTreeHeadJson,
  signTreeHead,
  type TreeHead,
  treeHeadToJson,
  verifyCosignature,
  verifyTreeHead,
} from './tree-head.js';
export { rootFromInclusionProof, verifyConsistency, verifyInclusion } from './verify.js';
export {
  type CosignatureAccepted,
  type CosignatureSubmission,
  type CosignedTreeHeadJson,
  consistencyProofWire,
  consistencyQuery,
  cosignatureAcceptedWire,
  cosignatureSubmissionWire,
  cosignatureWire,
  cosignedTreeHeadFromWire,
  cosignedTreeHeadToWire,
  cosignedTreeHeadWire,
  type GroupProofResponse,
  groupProofWire,
  inclusionProofWire,
  inclusionQuery,
  type LoggedLeafJson,
  type LoggedLeavesResponse,
  type LogKeyResponse,
  loggedLeafToWire,
  loggedLeafWire,
  loggedLeavesFromWire,
  loggedLeavesWire,
  logKeyToWire,
  logKeyWire,
  type Problem,
  problemWire,
  sizeParam,
  treeHeadWire,
  treeSizeQuery,
  WIRE_ROUTES,
} from './wire.js';
export { verifyTreeHeadExtends } from './witness.js';
