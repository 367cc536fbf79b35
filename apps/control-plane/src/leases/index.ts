// Leases: THE rule every executor (inline executor, runners, the agent service) holds its runs by.
// See the "Leases" section of apps/control-plane/README.md.
export { LeaseKeeper, type LeaseKeeperOptions } from './keeper.js';
export {
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_ATTEMPTS,
  type LeasePolicy,
  LeasePolicyInput,
  leasePolicy,
} from './policy.js';
export {
  assertCurrentEpoch,
  grant,
  type HeldLease,
  type Lease,
  leaseUpsert,
  NEXT_ATTEMPT,
  type RenewResult,
  release,
  releaseSettled,
  renew,
  staleLease,
} from './store.js';
export {
  type Expired,
  LOST_CODE,
  type SweepResult,
  scanExpiredLeases,
  settleExpired,
  sweepExpiredLeases,
} from './sweep.js';
