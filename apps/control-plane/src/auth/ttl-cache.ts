// One replica's memory of ledger answers, for at most `ttlMs` each: key → value. Used for verified API keys
// (key-cache.ts) and runner credentials (runner-credentials.ts); both are evicted by a NOTIFY sent in the
// revoking transaction. Only positive answers are remembered (the caller never `set`s a refusal).
//
// The generation guard: a lookup reads the ledger between `begin` and `set`. If an eviction (one key or
// all) arrives while that read is in flight, the read may predate the revoking commit: its answer is not
// remembered (`set` with a generation older than the current one is a no-op). Without it a revocation
// heard mid-lookup would be undone by the lookup's late `set`, and the revoked entry would answer for
// another `ttlMs`.
//
// One read per key at a time (`lookup`): lookups that miss while a read of the same key is in flight share
// it. Without that, a key expiring under load was read once per request arriving in that millisecond (the
// runner bench's 16 clients: 16 key queries at once, each taking a pooled connection, so the pool grew to its
// maximum and every new connection was warmed with every hot statement, warm-pool.ts). An eviction detaches
// the read in flight: lookups after it start their own, so none is answered from a read that predates it.

/** `evict` with either of these forgets every entry (the NOTIFY payload for "everything"). */
export const EVICT_ALL: readonly string[] = ['', '*'];
const MAX_ENTRIES = 10_000;

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly reads = new Map<string, Promise<V | undefined>>();
  private readonly listeners = new Set<(key: string) => void>();
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly nowMs: () => number = () => performance.now(),
    private readonly maxEntries: number = MAX_ENTRIES,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.nowMs()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * The remembered value of `key`, else `read`'s answer (undefined: refused, never remembered), shared with
   * every lookup of `key` that misses while it is in flight. A rejected read rejects each of them and is not
   * remembered.
   */
  lookup(key: string, read: (key: string) => Promise<V | undefined>): Promise<V | undefined> {
    const known = this.get(key);
    if (known !== undefined) return Promise.resolve(known);
    const inFlight = this.reads.get(key);
    if (inFlight) return inFlight;
    const generation = this.begin();
    const answer = read(key).then((value) => {
      if (value !== undefined) this.set(key, value, generation);
      return value;
    });
    this.reads.set(key, answer);
    const detach = () => {
      if (this.reads.get(key) === answer) this.reads.delete(key);
    };
    answer.then(detach, detach);
    return answer;
  }

  /** Before the ledger read whose answer may be remembered: the generation to hand to `set`. */
  begin(): number {
    return this.generation;
  }

  /** Remember `value` — unless anything was evicted since `generation` (the read may predate it). */
  set(key: string, value: V, generation: number): void {
    if (generation !== this.generation) return;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, until: this.nowMs() + this.ttlMs });
  }

  /** Entries held (an expired one until it is asked for or evicted): for tests. */
  get size(): number {
    return this.entries.size;
  }

  /** Forget `key` ('' or '*': every entry); reads begun before this are neither remembered nor shared any more. */
  evict(key: string): void {
    this.generation += 1;
    if (EVICT_ALL.includes(key)) {
      this.entries.clear();
      this.reads.clear();
    } else {
      this.entries.delete(key);
      this.reads.delete(key);
    }
    for (const listener of [...this.listeners]) listener(key);
  }

  /**
   * Hear every eviction after the cache has forgotten the key (its payload: a key, or '' / '*' for all), so a
   * holder of something long-lived granted on a cached answer (a stream) can re-check it. Returns the unsubscribe.
   */
  onEvict(listener: (key: string) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
