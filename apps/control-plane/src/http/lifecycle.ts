// Graceful shutdown at the HTTP edge: once draining, writes are refused with a 503 problem (stop
// admitting), reads still answer, live streams end, and `drain()` waits for in-flight requests.
import { anySignal } from 'any-signal';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';
import { problem, sendProblem } from './problem.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export class Lifecycle {
  #draining = false;
  #inFlight = 0;
  #idle: (() => void)[] = [];
  readonly #shutdown = new AbortController();

  get draining(): boolean {
    return this.#draining;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Aborted when draining starts: long-lived responses (SSE) listen to it and end. */
  get signal(): AbortSignal {
    return this.#shutdown.signal;
  }

  /**
   * A long-poll: `wait` gets a signal aborted when its client goes away OR when draining starts, so a held
   * poll answers at once (empty) instead of keeping `drain()` waiting until its `waitMs` ends (up to 25 s).
   * The two are joined for this poll only (`anySignal`, cleared when `wait` ends): `AbortSignal.any` keeps
   * every signal it joined to the shutdown signal, which lives as long as the process — one per runner or
   * agent-host lease poll (Node 20: nodejs/node#55351; README, "Long-lived signals").
   */
  async poll<T>(request: AbortSignal, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = anySignal([request, this.#shutdown.signal]);
    try {
      return await wait(signal);
    } finally {
      signal.clear();
    }
  }

  middleware(): MiddlewareHandler<AppEnv> {
    return async (c, next) => {
      if (this.#draining && !READ_METHODS.has(c.req.method)) {
        return sendProblem(
          c,
          problem('shutting_down', 'the control plane is shutting down; retry elsewhere'),
          {
            'retry-after': '5',
            connection: 'close',
          },
        );
      }
      this.#inFlight++;
      try {
        await next();
      } finally {
        this.#inFlight--;
        if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
      }
    };
  }

  /** Stop admitting, end streams, and wait (up to `timeoutMs`) for in-flight requests to finish. */
  async drain(timeoutMs: number): Promise<{ drained: boolean; inFlight: number }> {
    this.#draining = true;
    this.#shutdown.abort();
    if (this.#inFlight === 0) return { drained: true, inFlight: 0 };
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return { drained, inFlight: this.#inFlight };
  }
}
