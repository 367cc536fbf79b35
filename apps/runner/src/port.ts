// The runner's port: every call the daemon makes to the control plane (docs/runner-protocol.md, "The
// runner's calls"). The daemon's core knows only this; `HttpRunnerApi` implements it over HTTP (http-api.ts).
// Every call takes an optional `signal` that ends it: the daemon gives each its request timeout, with an
// interval's abort where one applies (timed-api.ts).
import type { Readable } from 'node:stream';
import type { TraceEvent } from '@everdict/run-model';
import type { CompleteBody, HeartbeatAnswer, Lease } from './protocol.js';

export interface RunnerApi {
  /** Long-poll for up to `free` leases (answers `[]` after `waitMs`, or earlier when `signal` aborts). */
  leases(free: number, waitMs: number, signal?: AbortSignal): Promise<Lease[]>;
  heartbeat(leases: { runId: string; epoch: number }[], signal?: AbortSignal): Promise<HeartbeatAnswer>;
  /** Appends events to the run's trajectory under `epoch`; resolves when stored. */
  events(runId: string, epoch: number, events: TraceEvent[], signal?: AbortSignal): Promise<void>;
  /** Streams one file of `out/` to the control plane. */
  artifact(
    runId: string,
    epoch: number,
    path: string,
    body: Readable,
    signal?: AbortSignal,
  ): Promise<{ path: string; address: string; size: number }>;
  /**
   * Several small files of `out/` in one call, each whole: one result per file, in order — stored, or past the
   * control plane's bound (`maxBytes`) and not stored. Optional: without it (or where the control plane has no
   * such route) each file goes through `artifact`.
   */
  artifacts?(
    runId: string,
    epoch: number,
    files: readonly BatchFile[],
    signal?: AbortSignal,
  ): Promise<BatchResult[]>;
  complete(runId: string, body: CompleteBody, signal?: AbortSignal): Promise<void>;
  /**
   * Several completions, in the audit chain's order: one result per item — settled, refused (the control
   * plane's refusal as an error) or skipped (after a refusal; nothing was done with it). With `next`, the
   * control plane also grants up to `next.free` new leases once the batch settled, in the same answer.
   */
  completeMany(
    items: (CompleteBody & { runId: string })[],
    next?: { free: number },
    signal?: AbortSignal,
  ): Promise<CompletionsReply>;
}

/** What `completeMany` answers: one result per item, in order, and the leases granted with the batch (`next`). */
export interface CompletionsReply {
  readonly results: CompletionResult[];
  readonly leases?: Lease[];
}

export type CompletionResult =
  | { readonly outcome: 'settled' }
  | { readonly outcome: 'refused'; readonly error: Error }
  | { readonly outcome: 'skipped' };

/** One file of an artifact batch: its path under out/ and its bytes. */
export interface BatchFile {
  readonly path: string;
  readonly bytes: Buffer;
}

/** One file's answer in a batch: stored by content address (201), or larger than the control plane takes (413). */
export type BatchResult =
  | { path: string; status: 201; address: string; size: number }
  | { path: string; status: 413; maxBytes: number };
