// Verified API keys, remembered per replica so a request costs no key query: hash → principal, for at most
// KEY_CACHE_MS (a TtlCache, ttl-cache.ts). A revocation evicts the key at once on the revoking replica and,
// by NOTIFY on KEYS_CHANNEL (sent in the revoking transaction, so at its commit), on every replica
// listening; a replica whose LISTEN connection was down when it was sent refuses the key at the latest
// KEY_CACHE_MS later. Unknown and revoked keys are never remembered: each of their requests asks the ledger.
// A lookup that raced an eviction is not remembered either (the cache's generation guard).
import type { Principal } from '../services/types.js';
import { TtlCache } from './ttl-cache.js';

export const KEYS_CHANNEL = 'everdict_api_keys';
export const KEY_CACHE_MS = 5_000;

/** Key hash → principal; `evict` takes KEYS_CHANNEL's payload (a key's hash; '' or '*': every key). */
export class KeyCache extends TtlCache<Principal> {
  constructor(nowMs: () => number = () => performance.now(), ttlMs: number = KEY_CACHE_MS) {
    super(ttlMs, nowMs);
  }
}
