// A turn's transcript IS its trajectory: TraceEvents the control plane stores under the turn's run id. This
// module appends to it (numbering events) through the port, reads it back whole, and names it: the digest
// of the transcript is the trajectory store's digest definition (BLAKE3 over canonical JSONL) over the
// events stored so far — the snapshot a transcript park records, recomputable by any process.
import type { TraceEvent, TraceEventInput } from '@everdict/run-model';
import { canonicalJsonl, digestOf } from '@everdict/trajectory-store';
import type { ControlPlane, LeaseRef } from '../control-plane.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the transcript numbers it (`seq`, `runId` and `ts` are the transcript's). */
export type TranscriptDraft = DistributiveOmit<TraceEventInput, 'seq' | 'runId' | 'ts'>;

const PAGE = 1000;

export interface TranscriptName {
  /** 64 lowercase hex (the runrecord address form of the store's `blake3:` digest). */
  readonly address: string;
  /** Canonical JSONL bytes the transcript holds: what a park keeps in storage. */
  readonly bytes: number;
  readonly eventCount: number;
}

export class Transcript {
  readonly #cp: ControlPlane;
  readonly runId: string;
  readonly #now: () => Date;
  #events: TraceEvent[] = [];

  private constructor(cp: ControlPlane, runId: string, now: () => Date) {
    this.#cp = cp;
    this.runId = runId;
    this.#now = now;
  }

  /** Reads the whole transcript (empty for a new turn). */
  static async load(
    cp: ControlPlane,
    runId: string,
    now: () => Date = () => new Date(),
  ): Promise<Transcript> {
    const t = new Transcript(cp, runId, now);
    await t.reload();
    return t;
  }

  /** Reads it again from the control plane (it may have appended, e.g. a park's label). */
  async reload(): Promise<void> {
    const events: TraceEvent[] = [];
    for (let offset = 0; ; ) {
      const page = await this.#cp.readTranscript(this.runId, { offset, limit: PAGE });
      events.push(...page.events);
      if (page.events.length === 0 || events.length >= page.eventCount) break;
      offset = page.nextOffset;
    }
    this.#events = events;
  }

  get events(): readonly TraceEvent[] {
    return this.#events;
  }

  get length(): number {
    return this.#events.length;
  }

  /** Appends drafts as one batch under the lease; returns the events as stored. */
  async append(lease: LeaseRef, drafts: readonly TranscriptDraft[]): Promise<TraceEvent[]> {
    if (drafts.length === 0) return [];
    const last = this.#events.at(-1)?.seq ?? -1;
    const ts = this.#now().toISOString();
    const events = drafts.map((d, i) => ({ ...d, seq: last + 1 + i, runId: this.runId, ts })) as TraceEvent[];
    await this.#cp.appendTranscript(lease, events);
    this.#events.push(...events);
    return events;
  }

  /** The transcript's name now: its address, its size, its length. */
  async name(): Promise<TranscriptName> {
    return nameEvents(this.#events);
  }
}

/** The address and size of a list of events (canonical JSONL, as the trajectory store digests it). */
export async function nameEvents(events: readonly TraceEvent[]): Promise<TranscriptName> {
  const text = canonicalJsonl(events);
  const digest = await digestOf(text);
  return {
    address: digest.slice('blake3:'.length),
    bytes: Buffer.byteLength(text),
    eventCount: events.length,
  };
}
