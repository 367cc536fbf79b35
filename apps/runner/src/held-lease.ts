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
