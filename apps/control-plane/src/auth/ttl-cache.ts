// One replica's memory of ledger answers, for at most `ttlMs` each: key → value. Used for verified API keys
// (key-cache.ts) and runner credentials (runner-credentials.ts); both are evicted by a NOTIFY sent in the
// revoking transaction. Only positive answers are remembered (the caller never `set`s a refusal).
//
// The generation guard: a lookup reads the ledger between `begin` and `set`. If an eviction (one key or
// all) arrives while that read is in flight, the read may predate the revoking commit: its answer is not
// remembered (`set` with a generation older than the current one is a no-op). Without it a revocation
// heard mid-lookup would be undone by the lookup's late `set`, and the revoked entry would answer for
// another `ttlMs`.

/** `evict` with either of these forgets every entry (the NOTIFY payload for "everything"). */
export const EVICT_ALL: readonly string[] = ['', '*'];
const MAX_ENTRIES = 10_000;

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
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

  /** Forget `key` ('' or '*': every entry); lookups begun before this are not remembered. */
  evict(key: string): void {
    this.generation += 1;
    if (EVICT_ALL.includes(key)) this.entries.clear();
    else this.entries.delete(key);
  }
}
