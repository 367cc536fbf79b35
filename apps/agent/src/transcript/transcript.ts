// A turn's transcript IS its trajectory: TraceEvents in the trajectory store under the turn's run id. This
// module appends to it (numbering events), reads it back whole, and names it: the digest of the transcript
// is the trajectory store's digest definition (BLAKE3 over canonical JSONL) over the events stored so far —
// the snapshot a transcript park records, recomputable by any process that can read the store.
import type { TraceEvent, TraceEventInput } from '@everdict/run-model';
import { canonicalJsonl, digestOf, type TrajectoryStore } from '@everdict/trajectory-store';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the transcript numbers it (`seq`, `runId` and `ts` are the transcript's). */
export type TranscriptDraft = DistributiveOmit<TraceEventInput, 'seq' | 'runId' | 'ts'>;

const PAGE = 10_000;

export interface TranscriptName {
  /** 64 lowercase hex (the runrecord address form of the store's `blake3:` digest). */
  readonly address: string;
  /** Canonical JSONL bytes the transcript holds: what a park keeps in storage. */
  readonly bytes: number;
  readonly eventCount: number;
}

export class Transcript {
  readonly #store: TrajectoryStore;
  readonly tenant: string;
  readonly runId: string;
  readonly #now: () => Date;
  #events: TraceEvent[] = [];

  private constructor(store: TrajectoryStore, tenant: string, runId: string, now: () => Date) {
    this.#store = store;
    this.tenant = tenant;
    this.runId = runId;
    this.#now = now;
  }

  /** Reads the whole transcript from the store (empty for a new turn). */
  static async load(
    store: TrajectoryStore,
    tenant: string,
    runId: string,
    now: () => Date = () => new Date(),
  ): Promise<Transcript> {
    const t = new Transcript(store, tenant, runId, now);
    const head = await store.head(tenant, runId);
    let offset = 0;
    while (offset < head.eventCount) {
      const page = await store.read(tenant, runId, { offset, limit: PAGE });
      t.#events.push(...page.items);
      if (page.items.length === 0) break;
      offset += page.items.length;
    }
    return t;
  }

  get events(): readonly TraceEvent[] {
    return this.#events;
  }

  get length(): number {
    return this.#events.length;
  }

  /** Appends drafts as one batch (one store object); returns the events as stored. */
  async append(drafts: readonly TranscriptDraft[]): Promise<TraceEvent[]> {
    if (drafts.length === 0) return [];
    const last = this.#events.at(-1)?.seq ?? -1;
    const ts = this.#now().toISOString();
    const events = drafts.map((d, i) => ({ ...d, seq: last + 1 + i, runId: this.runId, ts }));
    await this.#store.append(this.tenant, this.runId, events);
    const stored = events as TraceEvent[];
    this.#events.push(...stored);
    return stored;
  }

  /** The transcript's name now: its address, its size, its length. */
  async name(): Promise<TranscriptName> {
    return nameEvents(this.#events);
  }

  /** Seals the trajectory (terminal turns only: afterwards appends are refused by the store). */
  async seal(): Promise<{ digest: string; eventCount: number }> {
    const { seal } = await this.#store.seal(this.tenant, this.runId);
    return { digest: seal.digest, eventCount: seal.eventCount };
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
