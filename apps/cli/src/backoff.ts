// The pause between reconnects of a dropped event stream: 250 ms doubling to 5 s, back to 250 ms after a
// good connection; a Retry-After the server sent is honoured (up to a minute). Pauses end early on Ctrl-C.

export const BACKOFF_MIN_MS = 250;
export const BACKOFF_MAX_MS = 5_000;
/** The longest Retry-After honoured: a server asking for more is asked again after this. */
export const RETRY_AFTER_CAP_MS = 60_000;

export class Backoff {
  private next: number;
  constructor(
    readonly minMs = BACKOFF_MIN_MS,
    readonly maxMs = BACKOFF_MAX_MS,
  ) {
    this.next = minMs;
  }

  /** The pause before the next attempt (and the one after it doubles, up to maxMs). */
  delay(retryAfterSeconds?: number): number {
    const base = this.next;
    this.next = Math.min(this.next * 2, this.maxMs);
    if (retryAfterSeconds === undefined) return base;
    return Math.max(base, Math.min(retryAfterSeconds * 1000, RETRY_AFTER_CAP_MS));
  }

  reset(): void {
    this.next = this.minMs;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
