// The interval's journal: the events a runner appends to a run's trajectory under one lease epoch. Events
// leave in bounded batches (≤ maxEvents, ≤ maxBytes of canonical JSON) as they happen — a batch is sent
// when full or after `flushMs` — and a producer that outruns the control plane waits for the batch in
// flight (back-pressure), so memory stays bounded whatever a command prints: the timer sends nothing while
// a batch is in flight, and no event is taken while a full batch waits behind it (at most two batches
// unacknowledged, and the one filling, whatever the number of producers). The journal root is the
// BLAKE3 of the canonical JSONL of every event sent, in order (@everdict/trajectory-store's canonical form
// and digest), computed as they go: nothing of the interval is kept to compute it. The digests (each a
// WebAssembly instance: ≈ 0.2 ms to make) are reused: a journal that closed gives its back, reset, to the
// next one; a journal abandoned with a batch maybe still in flight (which would update it) keeps its own.
import { setTimeout as sleep } from 'node:timers/promises';
import type { TraceEvent } from '@everdict/run-model';
import { canonicalLine, StreamingDigest } from '@everdict/trajectory-store';
import { RunnerError } from './errors.js';
import type { RunnerApi } from './port.js';
import { isTransient, retryDelayMs } from './transient.js';

/** Sends of one batch at most: the first and its retries after transient failures (transient.ts). */
export const MAX_SENDS = 6;

export interface JournalOptions {
  readonly maxEvents?: number;
  readonly maxBytes?: number;
  readonly flushMs?: number;
  /** The seq of the first event (the lease's `seqFrom`: the run's trajectory continues across attempts). */
  readonly seqFrom?: number;
}

/** An event before the journal numbers it. */
export type EventDraft = TraceEvent extends infer E
  ? E extends unknown
    ? Omit<E, 'seq' | 'runId' | 'ts'> & { ts?: string }
    : never
  : never;

export class Journal {
  readonly #api: Pick<RunnerApi, 'events'>;
  readonly #runId: string;
  readonly #epoch: number;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #digest: StreamingDigest;
  #batch: TraceEvent[] = [];
  #lines: string[] = [];
  #batchBytes = 0;
  #seq = 0;
  readonly #first: number;
  #inFlight: Promise<void> = Promise.resolve();
  /** Batches handed to the control plane and not yet answered (the one in flight and those behind it). */
  #sending = 0;
  #failure: unknown;
  #timer: NodeJS.Timeout;
  /** Closed: the digest went back to the spares, nothing more is hashed or sent. */
  #closed = false;
  /** Abandoned (a killed interval): a batch that failed is not sent again. */
  #abandoned = false;

  private constructor(
    api: Pick<RunnerApi, 'events'>,
    runId: string,
    epoch: number,
    digest: StreamingDigest,
    o: JournalOptions,
  ) {
    this.#api = api;
    this.#runId = runId;
    this.#epoch = epoch;
    this.#digest = digest;
    this.#seq = o.seqFrom ?? 0;
    this.#first = this.#seq;
    this.#maxEvents = o.maxEvents ?? 1000;
    this.#maxBytes = o.maxBytes ?? 256 * 1024;
    this.#timer = setInterval(() => {
      // One batch at a time: what comes meanwhile waits for it (a slow control plane gets bigger batches,
      // not more of them).
      if (this.#batch.length > 0 && this.#sending === 0) void this.flush().catch(() => {});
    }, o.flushMs ?? 200);
    this.#timer.unref();
  }

  static async open(
    api: Pick<RunnerApi, 'events'>,
    runId: string,
    epoch: number,
    options: JournalOptions = {},
  ): Promise<Journal> {
    return new Journal(api, runId, epoch, await StreamingDigest.take(), options);
  }

  /** Events appended so far. */
  get count(): number {
    return this.#seq - this.#first;
  }

  /**
   * Appends one event; resolves at once unless the batch is full, then when it was sent (back-pressure). While
   * a full batch waits behind the one in flight (another producer filled it), waits for both first.
   */
  async append(draft: EventDraft): Promise<void> {
    while (this.#sending > 1) await this.#inFlight;
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#closed) throw new RunnerError('bad_state', 'the journal is closed');
    const event = {
      ts: new Date().toISOString(),
      ...draft,
      seq: this.#seq,
      runId: this.#runId,
    } as TraceEvent;
    this.#seq += 1;
    const line = canonicalLine(event);
    this.#batch.push(event);
    this.#lines.push(line);
    this.#batchBytes += Buffer.byteLength(line);
    if (this.#batch.length >= this.#maxEvents || this.#batchBytes >= this.#maxBytes) await this.flush();
  }

  /** Sends what is pending (after the batch in flight). Rejects if the control plane refused a batch. */
  flush(): Promise<void> {
    const events = this.#batch;
    const lines = this.#lines;
    this.#batch = [];
    this.#lines = [];
    this.#batchBytes = 0;
    if (events.length > 0) this.#sending += 1;
    const next = this.#inFlight.then(async () => {
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#closed && events.length > 0) throw new RunnerError('bad_state', 'the journal is closed');
      if (events.length === 0) return;
      try {
        await this.#send(events);
      } catch (err) {
        this.#failure = err;
        throw err;
      }
      for (const l of lines) this.#digest.update(l);
    });
    if (events.length > 0) void next.then(this.#sent, this.#sent);
    this.#inFlight = next.catch(() => {});
    return next;
  }

  /**
   * One batch to the control plane — again, the same events, after a transient failure (transient.ts: the
   * store skips a batch it holds already), up to MAX_SENDS in all, and not once the journal was abandoned.
   */
  async #send(events: TraceEvent[]): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        return await this.#api.events(this.#runId, this.#epoch, events);
      } catch (err) {
        if (!isTransient(err) || failures + 1 >= MAX_SENDS || this.#abandoned) throw err;
      }
      await sleep(retryDelayMs(failures));
      if (this.#abandoned) throw new RunnerError('bad_state', 'the journal was abandoned');
    }
  }

  readonly #sent = (): void => {
    this.#sending -= 1;
  };

  /** Flushes everything and returns the journal root (64 hex). */
  async close(): Promise<string> {
    clearInterval(this.#timer);
    await this.flush();
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#closed) throw new RunnerError('bad_state', 'the journal is closed');
    const root = this.#digest.digest().slice('blake3:'.length);
    // Every batch was sent and hashed (the flush above waited for the one in flight): the digest is free.
    this.#closed = true;
    this.#digest.release();
    return root;
  }

  /** Stops the timer without sending anything more (a killed interval). */
  abandon(): void {
    this.#abandoned = true;
    clearInterval(this.#timer);
    this.#batch = [];
    this.#lines = [];
  }
}
