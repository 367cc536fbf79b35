// Verified API keys, remembered per replica so a request costs no key query: hash → principal, for at most
// KEY_CACHE_MS. A revocation evicts the key at once on the revoking replica and, by NOTIFY on KEYS_CHANNEL
// (sent in the revoking transaction, so at its commit), on every replica listening; a replica whose LISTEN
// connection was down when it was sent refuses the key at the latest KEY_CACHE_MS later. Unknown and
// revoked keys are never remembered: each of their requests asks the ledger.
import type { Principal } from '../services/types.js';

export const KEYS_CHANNEL = 'everdict_api_keys';
export const KEY_CACHE_MS = 5_000;
const MAX_ENTRIES = 10_000;

export class KeyCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly nowMs: () => number = () => performance.now(),
    private readonly ttlMs: number = KEY_CACHE_MS,
  ) {}

  get(hash: string): Principal | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (e.until <= this.nowMs()) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.principal;
  }

  set(hash: string, principal: Principal): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, { principal, until: this.nowMs() + this.ttlMs });
  }

  /** A revoked key (payload of KEYS_CHANNEL: its hash); '' or '*' forgets every key. */
  evict(hash: string): void {
    if (hash === '' || hash === '*') this.entries.clear();
    else this.entries.delete(hash);
  }
}
