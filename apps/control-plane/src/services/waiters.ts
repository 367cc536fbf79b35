// Long-polls asleep until something may have changed: `wait` resolves at the next `wake`, after its timeout,
// or when its signal aborts, whichever comes first, and leaves nothing behind (its timer cleared, its listener
// removed). Shared by the runners' lease long-polls (runners/service.ts) and the agent hosts' turn long-polls
// (agents/turn-waiters.ts).
// A wake that comes while a long-poll is not waiting (it is looking: its lease transaction is in flight) must not
// be lost: the poll notes `generation` before it looks and passes it to `wait`, which returns at once when a wake
// came since.

export class Waiters {
  readonly #waiting = new Set<() => void>();
  #generation = 0;

  /** Counts wakes: a poll notes it before it looks. */
  get generation(): number {
    return this.#generation;
  }

  /** Wakes every wait in progress, and every wait begun with an older `generation`. */
  wake(): void {
    this.#generation++;
    const all = [...this.#waiting];
    this.#waiting.clear();
    for (const w of all) w();
  }

  /**
   * Resolves at the next wake, after `ms`, or when `signal` aborts — at once when `seen` (the `generation` noted
   * before the caller last looked) is not the current one: a wake came meanwhile.
   */
  wait(ms: number, signal?: AbortSignal, seen?: number): Promise<void> {
    if ((seen !== undefined && seen !== this.#generation) || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiting.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiting.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Waits in progress (for tests). */
  get size(): number {
    return this.#waiting.size;
  }
}
