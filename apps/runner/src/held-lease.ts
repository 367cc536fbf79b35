// What the daemon (daemon.ts) keeps of each lease it holds, how it heartbeats them, and how long it waits for
// work to end.
import { ClientError } from '@everdict/client';
import { anySignal } from 'any-signal';
import type { Lease } from './protocol.js';

/**
 * A held lease: waiting for a slot, executing in one, settling behind it (reading out/, the dispose,
 * then its completion queued and sent), uploading (files of out/: maybe long, no batch on its way meanwhile).
 */
export type Phase = 'waiting' | 'executing' | 'settling' | 'uploading';

export interface Held {
  readonly lease: Lease;
  readonly abort: AbortController;
  phase: Phase;
  /** Starts a waiting interval (or ends it, aborted before it started). */
  readonly begin: () => void;
  readonly done: Promise<void>;
  /** Kills the interval when its lease ends unrenewed, as this runner knows it (the daemon's `#arm`). */
  expiry?: NodeJS.Timeout;
  /** `performance.now()` its lease was last renewed from (its grant's arrival, a renewing heartbeat's send). */
  renewedFrom?: number;
}

/**
 * Heartbeats in flight at once, at most. One whose answer is slow does not hold the next one back (each goes out
 * on its interval), but a control plane that answers none is not sent an unbounded pile either: a tick that finds
 * this many in flight is owed, and sent as soon as one of them ends.
 */
export const HEARTBEATS_IN_FLIGHT = 2;

/**
 * How long one heartbeat may go unanswered: the request timeout, but at most half the shortest lease granted —
 * with `HEARTBEATS_IN_FLIGHT` hanging, a fresh one still goes out within half a lease, and has the other half to
 * be answered in (an answer later than `leaseMs` after its send renews nothing anyway).
 */
export function heartbeatTimeoutMs(requestTimeoutMs: number, shortestLeaseMs: number): number {
  return Math.max(1, Math.min(requestTimeoutMs, Math.floor(shortestLeaseMs / 2)));
}

/** Whether `work` ended within `ms` (it goes on either way). */
export async function endsWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    work.then(() => true),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return ended;
}

/**
 * Arms (again) `expired` at the end of `h`'s lease as this runner knows it: `leaseMs` after `from`
 * (`performance.now()` when the lease was last renewed: its grant arrived, or a heartbeat that renewed it was
 * sent — before the control plane renewed it, so never later than its own expiry). A lease no heartbeat renewed
 * by then (the control plane unreachable, its answers failing) has expired there and its run is requeued to
 * another runner: the daemon kills the interval instead of running it on unleased (it sends nothing).
 */
export function armExpiry(h: Held, from: number, expired: () => void): void {
  clearTimeout(h.expiry);
  h.renewedFrom = from;
  h.expiry = setTimeout(expired, Math.max(0, from + h.lease.leaseMs - performance.now()));
  h.expiry.unref();
}

/**
 * A heartbeat sent at `sentAt` renewed `h`: its expiry moves to `leaseMs` after `sentAt` — unless a heartbeat sent
 * later already renewed it (heartbeats overlap: an older answer arriving late moves nothing, neither back nor past
 * its own send). Whether it moved.
 */
export function renewExpiry(h: Held, sentAt: number, expired: () => void): boolean {
  if (h.renewedFrom !== undefined && sentAt <= h.renewedFrom) return false;
  armExpiry(h, sentAt, expired);
  return true;
}

export interface PacerOptions {
  readonly everyMs: number;
  readonly requestTimeoutMs: number;
  /** The shortest `leaseMs` granted yet (infinite before the first grant). */
  readonly shortestLeaseMs: () => number;
  /** One heartbeat, its answer applied; `signal` cuts it (its timeout, `stop`). */
  readonly beat: (signal: AbortSignal) => Promise<void>;
  readonly log: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * Sends a heartbeat every `everyMs` from its start — whatever an earlier one still waits for, up to
 * `HEARTBEATS_IN_FLIGHT` in flight (a tick past that is owed, sent when one ends) — each cut after
 * `heartbeatTimeoutMs` as ClientError `network`. One slow answer so delays nothing: the heartbeats after it renew.
 */
export class HeartbeatPacer {
  readonly #o: PacerOptions;
  readonly #timer: NodeJS.Timeout;
  readonly #stopped = new AbortController();
  #inFlight = 0;
  #owed = false;

  constructor(options: PacerOptions) {
    this.#o = options;
    this.#timer = setInterval(() => this.#tick(), options.everyMs);
  }

  /** Heartbeats sent and not ended yet: for tests and logs. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** No heartbeat is sent any more; those in flight are cut (their answers are not applied). */
  stop(): void {
    clearInterval(this.#timer);
    this.#stopped.abort();
  }

  #tick(): void {
    if (this.#stopped.signal.aborted) return;
    if (this.#inFlight < HEARTBEATS_IN_FLIGHT) return void this.#send();
    if (!this.#owed) this.#log('heartbeats unanswered: the next is sent when one of them ends');
    this.#owed = true;
  }

  #log(msg: string, fields?: Record<string, unknown>): void {
    this.#o.log(msg, fields);
  }

  async #send(): Promise<void> {
    const ms = heartbeatTimeoutMs(this.#o.requestTimeoutMs, this.#o.shortestLeaseMs());
    const cut = new AbortController();
    const timer = setTimeout(
      () => cut.abort(new ClientError('network', 0, `no answer to a heartbeat within ${ms} ms`)),
      ms,
    );
    this.#inFlight += 1;
    // Joined for this heartbeat only (timed-api.ts: `AbortSignal.any` would keep every one for as long as
    // `#stopped` lives).
    const signal = anySignal([cut.signal, this.#stopped.signal]);
    try {
      await this.#o.beat(signal);
    } catch (err) {
      if (!this.#stopped.signal.aborted) this.#log('heartbeat failed', { err: String(err) });
    } finally {
      signal.clear();
      clearTimeout(timer);
      this.#inFlight -= 1;
      if (this.#owed && !this.#stopped.signal.aborted) {
        this.#owed = false;
        void this.#send();
      }
    }
  }
}
