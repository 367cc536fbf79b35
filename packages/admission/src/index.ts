// @everdict/admission — the one admission gate: envelopes (402), caps and fan-out guards (429), class,
// tenant-fair WFQ with aging, the session pool, cascade cancellation, and the store they run on.

export { type CascadeOptOut, type CausalNode, cascade, cascadeOptOut, revokedBy } from './cascade.js';
export { assignClass, DEFAULT_CLASS, isAutonomous } from './class.js';
export {
  type AdmissionDecision,
  type Admitted,
  type RefusalRule,
  type Refused,
  type RetryHint,
  refusalError,
} from './decision.js';
export {
  type CascadeResult,
  cancelTree,
  configureGlobal,
  configureTenant,
  dequeue,
  type Release,
  release,
} from './dispatch.js';
export {
  type Actuals,
  admitOnPath,
  canAdmit,
  charge,
  delegate,
  type Envelope,
  type Exhaustion,
  exhaustion,
  inFlightBlock,
  MAX_USD,
  MICRO_USD_PER_USD,
  rootEnvelope,
  rootEnvelopeId,
  type SliceSpec,
  type Spend,
  settleOnPath,
  toMicroUsd,
} from './envelope.js';
export { AdmissionError, type AdmissionErrorCode, httpStatusOf } from './errors.js';
export { FairQueue, LANE, type QueueItem } from './fair-queue.js';
export { admit, admitTrusted, decide, type Verdict } from './gate.js';
export { IndexedHeap } from './heap.js';
export { MemoryAdmissionStore } from './memory/index.js';
export {
  CascadePolicy,
  type CascadePolicyInput,
  EnvelopeCaps,
  GlobalPolicy,
  type GlobalPolicyInput,
  globalPolicy,
  MAX_COUNT,
  SessionPolicy,
  TenantPolicy,
  type TenantPolicyInput,
  tenantPolicy,
} from './policy.js';
export { AdmissionRequest, type AdmissionRequestInput, parseAdmissionRequest } from './request.js';
export { hasRoom, isMemberSession, type PoolCaps, type SessionLoad, sessionBlock } from './session-pool.js';
export type {
  AdmissionGuards,
  AdmissionKey,
  AdmissionPlan,
  AdmissionSnapshot,
  AdmissionStore,
  CommitResult,
  Dispatch,
  RunSlot,
  Settlement,
  SettleRefusal,
  SettleResult,
  SyncAdmissionSteps,
  TenantLoad,
} from './store.js';
export { hasSyncSteps, settleRefusal } from './store.js';
export { AGED_LANE, finishTag, isContinuing, MAX_WEIGHT, MIN_WEIGHT } from './wfq.js';
