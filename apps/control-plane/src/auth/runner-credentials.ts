// Runner credentials, remembered per replica so a runner's call (lease poll, heartbeat, events, completions)
// costs no `runners` lookup: credential hash → the runner as it resolved, for at most RUNNER_CACHE_MS. A
// revocation or a drain evicts it at once on the replica that made it and, by NOTIFY on RUNNERS_CHANNEL
// (sent in that transaction, so at its commit), on every replica listening; a replica whose LISTEN
// connection was down refuses a revoked credential at the latest RUNNER_CACHE_MS later (as key-cache.ts).
// Unknown and revoked credentials are never remembered. A lookup that raced an eviction (it read the row
// before the revoking commit, and answers after the eviction) is not remembered either: `set` takes the
// generation `begin` gave before the read, and any eviction since makes it a no-op.
import type { RunnerIdentity } from '../runners/registry.js';

export const RUNNERS_CHANNEL = 'everdict_runners';
export const RUNNER_CACHE_MS = 5_000;
const MAX_ENTRIES = 10_000;

export class RunnerCredentials {
  private readonly entries = new Map<string, { runner: RunnerIdentity; until: number }>();
  private generation = 0;

  constructor(
    private readonly nowMs: () => number = () => performance.now(),
    private readonly ttlMs: number = RUNNER_CACHE_MS,
  ) {}

  get(hash: string): RunnerIdentity | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (e.until <= this.nowMs()) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.runner;
  }

  /** Before a ledger read whose answer may be remembered: the generation to hand to `set`. */
  begin(): number {
    return this.generation;
  }

  /** Remember `runner` — unless anything was evicted since `generation` (the read may predate it). */
  set(hash: string, runner: RunnerIdentity, generation: number): void {
    if (generation !== this.generation || runner.state === 'revoked') return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, { runner, until: this.nowMs() + this.ttlMs });
  }

  /** A revoked or draining runner's credential hash (RUNNERS_CHANNEL's payload); '' or '*': every one. */
  evict(hash: string): void {
    this.generation += 1;
    if (hash === '' || hash === '*') this.entries.clear();
    else this.entries.delete(hash);
  }
}
