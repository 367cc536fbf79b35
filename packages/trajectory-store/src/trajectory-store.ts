// The trajectory store: append / read / tail / seal over any ObjectBackend. One writer per trajectory per
// process (appends and seals of one trajectory are serialized here); any number of readers.
import type { TraceEvent, TrajectoryRef } from '@everdict/run-model';
import { type AppendResult, appendEvents } from './append.js';
import type { ObjectBackend } from './backend.js';
import { TrajectoryStoreError } from './errors.js';
import { checkRunIds, numberDrafts, parseBatch, type TraceEventDraft } from './events.js';
import { checkId, checkTenant } from './keys.js';
import { type Page, readLive, readSealed, type Verification, verifySealed } from './read.js';
import type { DeletionRecord, Provenance, SealRecord } from './records.js';
import { sealTrajectory } from './seal.js';
import { loadState, type TrajectoryState } from './state.js';
import { ChangeFeed, KeyedLock } from './sync.js';

export interface TrajectoryStoreOptions {
  readonly backend: ObjectBackend;
  /** The clock (seal and deletion times); defaults to the system clock. */
  readonly now?: () => Date;
  /** Events per append call (default 10,000). */
  readonly maxBatchEvents?: number;
  /** Uncompressed canonical bytes per append call (default 8 MiB). */
  readonly maxBatchBytes?: number;
  /** How often a tail re-checks storage for appends made by another process (default 1000 ms). */
  readonly tailPollMs?: number;
  /** Trajectories whose state is kept in memory (default 10,000; evicted ones reload from storage). */
  readonly cacheSize?: number;
}

export interface TrajectoryPage extends Page {
  /** Events stored so far (the total once sealed). */
  readonly eventCount: number;
  readonly sealed: boolean;
}

export interface TrajectoryHead {
  readonly trajectoryId: string;
  readonly status: 'live' | 'sealed' | 'deleted';
  readonly eventCount: number;
  readonly lastSeq: number;
  readonly seal?: SealRecord;
  readonly deletion?: DeletionRecord;
  readonly provenance?: Provenance;
}

export interface Sealed {
  /** What the caller stores on the run (`run.trajectory`). */
  readonly ref: TrajectoryRef;
  readonly seal: SealRecord;
}

export interface TailItem {
  readonly offset: number;
  readonly event: Page['items'][number];
}

const DEFAULTS = {
  maxBatchEvents: 10_000,
  maxBatchBytes: 8 * 1024 * 1024,
  tailPollMs: 1000,
  cacheSize: 10_000,
};

export class TrajectoryStore {
  readonly backend: ObjectBackend;
  readonly #now: () => Date;
  readonly #opts: typeof DEFAULTS;
  readonly #states = new Map<string, TrajectoryState>();
  readonly #locks = new KeyedLock();
  readonly #feed = new ChangeFeed();

  constructor(options: TrajectoryStoreOptions) {
    this.backend = options.backend;
    this.#now = options.now ?? (() => new Date());
    this.#opts = {
      maxBatchEvents: options.maxBatchEvents ?? DEFAULTS.maxBatchEvents,
      maxBatchBytes: options.maxBatchBytes ?? DEFAULTS.maxBatchBytes,
      tailPollMs: options.tailPollMs ?? DEFAULTS.tailPollMs,
      cacheSize: options.cacheSize ?? DEFAULTS.cacheSize,
    };
  }

  /** Appends events (run-model TraceEvents of run `trajectoryId`, `seq` increasing); re-sent ones are skipped. */
  async append(tenant: string, trajectoryId: string, events: unknown): Promise<AppendResult> {
    return this.#append(tenant, trajectoryId, parseBatch(events, trajectoryId, this.#opts.maxBatchEvents));
  }

  /**
   * `append` without the zod parse, for events that trusted code already parsed with run-model's
   * TraceEvent schema (an HTTP route that validated its body). The run id is still checked.
   */
  async appendTrusted(
    tenant: string,
    trajectoryId: string,
    events: readonly TraceEvent[],
  ): Promise<AppendResult> {
    if (events.length > this.#opts.maxBatchEvents)
      throw new TrajectoryStoreError(
        'bad_request',
        `a batch holds at most ${this.#opts.maxBatchEvents} events`,
      );
    checkRunIds(events, trajectoryId);
    return this.#append(tenant, trajectoryId, events);
  }

  async #append(tenant: string, trajectoryId: string, batch: readonly TraceEvent[]): Promise<AppendResult> {
    const key = this.#key(tenant, trajectoryId);
    return this.#locks.run(key, async () => {
      const state = await this.#live(key, tenant, trajectoryId);
      const result = await appendEvents(this.#target(tenant, trajectoryId, state), batch);
      if (result.appended > 0) this.#feed.bump(key);
      return result;
    });
  }

  /**
   * Appends drafts (no seq, no runId), numbered after the last stored event. Idempotent per `batchKey`
   * (32 lowercase hex, e.g. a digest of the span ids): a batch already stored under it is not stored again.
   */
  async appendDrafts(
    tenant: string,
    trajectoryId: string,
    drafts: readonly TraceEventDraft[],
    batchKey: string,
  ): Promise<AppendResult> {
    if (!/^[0-9a-f]{32}$/.test(batchKey))
      throw new TrajectoryStoreError('bad_request', 'a batch key is 32 lowercase hex characters');
    const key = this.#key(tenant, trajectoryId);
    return this.#locks.run(key, async () => {
      const state = await this.#live(key, tenant, trajectoryId);
      const index = state.index;
      const prior = index.findBatch(batchKey);
      if (prior >= 0)
        return {
          appended: 0,
          duplicates: index.at(prior).count,
          eventCount: index.eventCount,
          lastSeq: index.lastSeq,
        };
      const batch = numberDrafts(drafts, trajectoryId, index.lastSeq + 1, this.#opts.maxBatchEvents);
      const result = await appendEvents(this.#target(tenant, trajectoryId, state), batch, batchKey);
      if (result.appended > 0) this.#feed.bump(key);
      return result;
    });
  }

  /** Events from `offset` (counted in events), at most `limit`; live or sealed. */
  async read(
    tenant: string,
    trajectoryId: string,
    { offset = 0, limit = 100 }: { offset?: number; limit?: number } = {},
  ): Promise<TrajectoryPage> {
    if (
      !Number.isSafeInteger(offset) ||
      offset < 0 ||
      !Number.isSafeInteger(limit) ||
      limit < 1 ||
      limit > 10_000
    )
      throw new TrajectoryStoreError(
        'bad_request',
        'offset is an integer ≥ 0 and limit an integer in 1..10000',
      );
    const key = this.#key(tenant, trajectoryId);
    let state = await this.#state(key, tenant, trajectoryId);
    if (state.status === 'live' && offset >= state.index.eventCount)
      state = await this.#reload(key, tenant, trajectoryId); // another process may have appended or sealed
    try {
      return await this.#readFrom(state, tenant, trajectoryId, offset, limit);
    } catch (err) {
      if (state.status !== 'live' || !(err instanceof TrajectoryStoreError)) throw err;
      const now = await this.#reload(key, tenant, trajectoryId); // a seal removed the chunks mid-read
      if (now.status === 'live') throw err;
      return this.#readFrom(now, tenant, trajectoryId, offset, limit);
    }
  }

  /** Follows the trajectory from `offset`: every stored event, then each new one, until it is sealed. */
  async *tail(
    tenant: string,
    trajectoryId: string,
    { offset = 0, signal, pageSize = 500 }: { offset?: number; signal?: AbortSignal; pageSize?: number } = {},
  ): AsyncGenerator<TailItem> {
    const key = this.#key(tenant, trajectoryId);
    let at = offset;
    for (;;) {
      signal?.throwIfAborted();
      const version = this.#feed.version(key);
      const page = await this.read(tenant, trajectoryId, { offset: at, limit: pageSize });
      for (const event of page.items) yield { offset: at++, event };
      if (page.items.length > 0) continue;
      if (page.sealed) return;
      await this.#feed.wait(key, version, this.#opts.tailPollMs, signal);
    }
  }

  /** Seals the trajectory (idempotent): its digest is BLAKE3 of the canonical JSONL. */
  async seal(tenant: string, trajectoryId: string, { sealedAt }: { sealedAt?: Date } = {}): Promise<Sealed> {
    const key = this.#key(tenant, trajectoryId);
    const seal = await this.#locks.run(key, async () => {
      const cached = this.#states.get(key);
      const state = await this.#reloadLocked(key, tenant, trajectoryId);
      // Storage is the truth; the running digests of this process's appends still hold if it agrees.
      if (
        state.status === 'live' &&
        cached?.status === 'live' &&
        cached.index.running &&
        cached.index.eventCount === state.index.eventCount &&
        cached.index.lastSeq === state.index.lastSeq
      )
        state.index.running = cached.index.running;
      if (state.status === 'sealed') return state.seal;
      if (state.status === 'deleted') throw deleted(trajectoryId, state.deletion);
      const record = await sealTrajectory({
        backend: this.backend,
        tenant,
        id: trajectoryId,
        index: state.index,
        sealedAt: (sealedAt ?? this.#now()).toISOString(),
        ...(state.provenance ? { provenance: state.provenance } : {}),
      });
      this.#remember(key, { status: 'sealed', seal: record });
      this.#feed.bump(key);
      return record;
    });
    return { ref: toTrajectoryRef(seal), seal };
  }

  /** Where the trajectory stands, from storage. */
  async head(tenant: string, trajectoryId: string): Promise<TrajectoryHead> {
    const key = this.#key(tenant, trajectoryId);
    const s = await this.#reload(key, tenant, trajectoryId);
    if (s.status === 'deleted')
      return {
        trajectoryId,
        status: 'deleted',
        eventCount: s.deletion.eventCount,
        lastSeq: -1,
        deletion: s.deletion,
      };
    if (s.status === 'sealed') {
      const p = s.seal.provenance;
      const base = {
        trajectoryId,
        status: 'sealed',
        eventCount: s.seal.eventCount,
        lastSeq: s.seal.lastSeq,
      } as const;
      return { ...base, seal: s.seal, ...(p ? { provenance: p } : {}) };
    }
    const p = s.provenance;
    const base = {
      trajectoryId,
      status: 'live',
      eventCount: s.index.eventCount,
      lastSeq: s.index.lastSeq,
    } as const;
    return p ? { ...base, provenance: p } : base;
  }

  /** Re-reads a sealed trajectory whole and checks it against its digest (and `expectedDigest`, the run's). */
  async verify(tenant: string, trajectoryId: string, expectedDigest?: string): Promise<Verification> {
    const s = await this.#reload(this.#key(tenant, trajectoryId), tenant, trajectoryId);
    if (s.status === 'deleted') throw deleted(trajectoryId, s.deletion);
    if (s.status !== 'sealed')
      throw new TrajectoryStoreError('not_found', `trajectory ${trajectoryId} is not sealed`);
    return verifySealed({ backend: this.backend, tenant, id: trajectoryId }, s.seal, expectedDigest);
  }

  /** Forgets cached state (after retention deleted it, or in tests that simulate a restart). */
  forget(tenant: string, trajectoryId: string): void {
    this.#states.delete(this.#key(tenant, trajectoryId));
    this.#feed.bump(this.#key(tenant, trajectoryId));
  }

  async close(): Promise<void> {
    this.#feed.closeAll();
    await this.backend.close();
  }

  #readFrom(
    s: TrajectoryState,
    tenant: string,
    id: string,
    offset: number,
    limit: number,
  ): Promise<TrajectoryPage> {
    const t = { backend: this.backend, tenant, id };
    if (s.status === 'deleted') throw deleted(id, s.deletion);
    if (s.status === 'sealed')
      return readSealed(t, s.seal, offset, limit).then((p) => ({
        ...p,
        eventCount: s.seal.eventCount,
        sealed: true,
      }));
    return readLive(t, s.index, offset, limit).then((p) => ({
      ...p,
      eventCount: s.index.eventCount,
      sealed: false,
    }));
  }

  #key(tenant: string, id: string): string {
    return `${checkTenant(tenant)}\u0000${checkId(id)}`;
  }

  #target(tenant: string, id: string, state: Extract<TrajectoryState, { status: 'live' }>) {
    return { backend: this.backend, tenant, id, index: state.index, maxBatchBytes: this.#opts.maxBatchBytes };
  }

  /** The live state (under the key's lock); sealed or deleted trajectories refuse appends. */
  async #live(
    key: string,
    tenant: string,
    id: string,
  ): Promise<Extract<TrajectoryState, { status: 'live' }>> {
    const state = this.#states.get(key) ?? (await this.#reloadLocked(key, tenant, id));
    if (state.status === 'live') return state;
    throw new TrajectoryStoreError(
      'trajectory_sealed',
      `trajectory ${id} is ${state.status}: it takes no events`,
      {
        trajectoryId: id,
        status: state.status,
      },
    );
  }

  async #state(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    const cached = this.#states.get(key);
    if (cached) {
      this.#states.delete(key);
      this.#states.set(key, cached); // LRU: most recent last
      return cached;
    }
    return this.#reload(key, tenant, id);
  }

  #reload(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    return this.#locks.run(key, () => this.#reloadLocked(key, tenant, id));
  }

  async #reloadLocked(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    const state = await loadState(this.backend, tenant, id);
    this.#remember(key, state);
    return state;
  }

  #remember(key: string, state: TrajectoryState): void {
    this.#states.delete(key);
    this.#states.set(key, state);
    if (this.#states.size > this.#opts.cacheSize) this.#states.delete(this.#states.keys().next().value!);
  }
}

export function toTrajectoryRef(seal: SealRecord): TrajectoryRef {
  return {
    ref: seal.trajectoryId,
    eventCount: seal.eventCount,
    sealedAt: seal.sealedAt,
    digest: seal.digest,
  };
}

function deleted(id: string, deletion: DeletionRecord): TrajectoryStoreError {
  return new TrajectoryStoreError('trajectory_deleted', `trajectory ${id} was deleted by retention`, {
    deletion,
  });
}
