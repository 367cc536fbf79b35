// Runner credentials, remembered per replica so a runner's call (lease poll, heartbeat, events, completions)
// costs no `runners` lookup: credential hash → the runner as it resolved, for at most RUNNER_CACHE_MS (a
// TtlCache, ttl-cache.ts). A revocation or a drain evicts it at once on the replica that made it and, by
// NOTIFY on RUNNERS_CHANNEL (sent in that transaction, so at its commit), on every replica listening; a
// replica whose LISTEN connection was down refuses a revoked credential at the latest RUNNER_CACHE_MS later
// (as key-cache.ts). Unknown and revoked credentials are never remembered. A lookup that raced an eviction
// (it read the row before the revoking commit, and answers after the eviction) is not remembered either:
// `set` takes the generation `begin` gave before the read, and any eviction since makes it a no-op.
import type { RunnerIdentity } from '../runners/registry.js';
import { TtlCache } from './ttl-cache.js';

export const RUNNERS_CHANNEL = 'everdict_runners';
export const RUNNER_CACHE_MS = 5_000;

/** Credential hash → runner; `evict` takes RUNNERS_CHANNEL's payload (a credential hash; '' or '*': all). */
export class RunnerCredentials extends TtlCache<RunnerIdentity> {
  constructor(nowMs: () => number = () => performance.now(), ttlMs: number = RUNNER_CACHE_MS) {
    super(ttlMs, nowMs);
  }

  /** A revoked runner is never remembered. */
  override set(hash: string, runner: RunnerIdentity, generation: number): void {
    if (runner.state !== 'revoked') super.set(hash, runner, generation);
  }
}
