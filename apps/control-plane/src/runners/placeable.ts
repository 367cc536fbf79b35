// The durable placement index (`runner_images`, written at pairing: registry.ts) read: whether a
// command/eval/sandbox run can be placed at all, and the replica's cache of its positive answers.
import { TtlCache } from '../auth/ttl-cache.js';
import type { Executor } from '../db/tx.js';

/** Is any non-revoked runner able to take (tenant, kind, image)? Read from the ledger: every replica agrees. */
export async function placeable(ex: Executor, tenant: string, kind: string, image: string): Promise<boolean> {
  const row = await ex
    .selectFrom('runner_images')
    .select('runner_id')
    .where('kind', '=', kind)
    .where('image', 'in', [image, '*'])
    .where((eb) => eb.or([eb('tenant_id', '=', tenant), eb('tenant_id', 'is', null)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * `placeable` answers of one replica, positives only, for at most PLACEABLE_CACHE_MS: a create door asks the
 * ledger once per (tenant, kind, image) while runners stay, and creates that miss together share that one read
 * (a TtlCache lookup: 16 creates at once after an expiry took 5 pooled connections and grew the pool). Only a
 * revoke makes a positive false: it clears the revoking replica's answers at once (service.ts) and every other
 * replica's at its commit's NOTIFY (RUNNERS_CHANNEL, heard by LeaseWaiters); a replica whose LISTEN connection
 * was down keeps a positive at most PLACEABLE_CACHE_MS. A negative is never kept (a runner paired since is seen
 * at once). A lookup that raced a clear is neither kept nor shared. Reads inside a caller's transaction (a
 * firing) bypass it.
 */
export class PlaceableCache {
  readonly #yes: TtlCache<true>;

  constructor(nowMs: () => number = () => performance.now(), ttlMs: number = PLACEABLE_CACHE_MS) {
    this.#yes = new TtlCache<true>(ttlMs, nowMs);
  }

  async placeable(ex: Executor, tenant: string, kind: string, image: string): Promise<boolean> {
    const answer = await this.#yes.lookup(JSON.stringify([tenant, kind, image]), async () =>
      (await placeable(ex, tenant, kind, image)) ? true : undefined,
    );
    return answer === true;
  }

  clear(): void {
    this.#yes.evict('*');
  }

  /** How many positives are held (an expired one until it is asked again or cleared): for tests. */
  get size(): number {
    return this.#yes.size;
  }
}

export const PLACEABLE_CACHE_MS = 5_000;
const placeableCaches = new WeakMap<object, PlaceableCache>();

/** The replica's (the core's `deps`) placement answers. */
export function placeableCache(deps: object): PlaceableCache {
  let c = placeableCaches.get(deps);
  if (!c) {
    c = new PlaceableCache();
    placeableCaches.set(deps, c);
  }
  return c;
}
