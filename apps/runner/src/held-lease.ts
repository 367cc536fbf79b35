// What the daemon (daemon.ts) keeps of each lease it holds, and how long it waits for work to end.
import type { Lease } from './protocol.js';

/**
 * A held lease: waiting for a slot, executing in one, settling behind it (the out/ snapshot, the dispose,
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
  h.expiry = setTimeout(expired, Math.max(0, from + h.lease.leaseMs - performance.now()));
  h.expiry.unref();
}
