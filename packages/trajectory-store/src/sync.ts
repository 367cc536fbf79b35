// In-process coordination: a lock per trajectory (appends and seals of one trajectory run one at a time)
// and a change feed that wakes tails when this process appends or seals.

export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    const result = prev.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}

export class ChangeFeed {
  readonly #versions = new Map<string, number>();
  readonly #waiters = new Map<string, Set<() => void>>();

  version(key: string): number {
    return this.#versions.get(key) ?? 0;
  }

  bump(key: string): void {
    this.#versions.set(key, this.version(key) + 1);
    const waiters = this.#waiters.get(key);
    this.#waiters.delete(key);
    for (const wake of waiters ?? []) wake();
  }

  /** Resolves when `key` moves past `since`, after `pollMs` (to re-check storage), or rejects on abort. */
  wait(key: string, since: number, pollMs: number, signal?: AbortSignal): Promise<void> {
    if (this.version(key) !== since) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const set = this.#waiters.get(key) ?? new Set<() => void>();
      this.#waiters.set(key, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0 && this.#waiters.get(key) === set) this.#waiters.delete(key);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal?.reason);
      };
      const timer = setTimeout(done, pollMs);
      set.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  closeAll(): void {
    for (const key of [...this.#waiters.keys()]) this.bump(key);
  }
}
