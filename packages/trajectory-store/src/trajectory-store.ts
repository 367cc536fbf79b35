// The trajectory store: append / read / tail / seal over any ObjectBackend. One writer per trajectory per
// process (appends and seals of one trajectory are serialized here); any number of readers.
import type { TraceEvent, TrajectoryRef } from '@everdict/run-model';
import { type AppendResult, appendEvents, checkBatchBytes } from './append.js';
import type { ObjectBackend } from './backend.js';
import { canonicalLine } from './canonical.js';
import { TrajectoryStoreError } from './errors.js';
import { checkRunIds, numberDrafts, parseBatch, type TraceEventDraft } from './events.js';
import { checkId, checkTenant, layout } from './keys.js';
import { readLive, readSealed, type Verification, verifySealed } from './read.js';
import type { DeletionRecord, SealRecord } from './records.js';
import { sealTrajectory } from './seal.js';
import type { TrajectoryState } from './state.js';
import { StateCache } from './state-cache.js';
import type {
  Sealed,
  TailItem,
  TrajectoryHead,
  TrajectoryPage,
  TrajectoryStoreOptions,
} from './store-types.js';
import { ChangeFeed } from './sync.js';

/** Refusals of the input itself: nothing was written, the cached state still holds. */
const REFUSALS = new Set(['bad_request', 'out_of_order', 'event_conflict', 'trajectory_sealed']);

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
  readonly #cache: StateCache;
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
    this.#cache = new StateCache(this.backend, this.#opts.cacheSize);
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
    return this.#cache.locks.run(key, () =>
      this.#writing(key, async () => {
        const state = await this.#live(key, tenant, trajectoryId);
        const result = await appendEvents(this.#target(tenant, trajectoryId, state), batch);
        if (result.appended > 0) this.#feed.bump(key);
        return result;
      }),
    );
  }

  /**
   * A write under the key's lock. If it fails, what this process knows of the trajectory is forgotten: a
   * write whose answer was lost (a timeout after the object landed) may have stored a chunk the cached index
   * does not hold, and the next append must number after it, not beside it (two chunks at one offset).
   */
  async #writing<T>(key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof TrajectoryStoreError) || !REFUSALS.has(err.code)) this.#cache.forget(key);
      throw err;
    }
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
    return this.#cache.locks.run(key, () =>
      this.#writing(key, async () => {
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
      }),
    );
  }

  /**
   * Refuses, without writing anything, drafts that `appendDrafts` would refuse for what they are (an event's
   * schema, the batch's event count or bytes), numbered from `firstSeq`: a caller writing several batches or
   * trajectories for one request checks them all first, so a refused request stores nothing.
   */
  checkDrafts(trajectoryId: string, drafts: readonly TraceEventDraft[], firstSeq = 0): void {
    const events = numberDrafts(drafts, trajectoryId, firstSeq, this.#opts.maxBatchEvents);
    let bytes = 0;
    for (const event of events) bytes += Buffer.byteLength(canonicalLine(event), 'utf8');
    checkBatchBytes(bytes, this.#opts.maxBatchBytes);
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
    let state = await this.#cache.get(key, tenant, trajectoryId);
    if (state.status === 'live' && offset >= state.index.eventCount)
      state = await this.#cache.reload(key, tenant, trajectoryId); // another process may have appended or sealed
    try {
      return await this.#readFrom(state, tenant, trajectoryId, offset, limit);
    } catch (err) {
      if (state.status !== 'live' || !(err instanceof TrajectoryStoreError)) throw err;
      const now = await this.#cache.reload(key, tenant, trajectoryId); // a seal removed the chunks mid-read
      if (now.status === 'live') throw err;
      return this.#readFrom(now, tenant, trajectoryId, offset, limit);
    }
  }

  /**
   * Follows the trajectory from `offset`: every stored event, then each new one, until it is sealed — or,
   * read to its end and not sealed, until `ended(eventCount)` answers true (its writer is done and nothing
   * will seal it, e.g. a run that ended without an event), asked each time the tail would wait.
   */
  async *tail(
    tenant: string,
    trajectoryId: string,
    {
      offset = 0,
      signal,
      pageSize = 500,
      ended,
    }: {
      offset?: number;
      signal?: AbortSignal;
      pageSize?: number;
      ended?: (eventCount: number) => Promise<boolean>;
    } = {},
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
      if (ended && (await ended(page.eventCount))) {
        // An event may have landed after the page was read and before its writer ended: read once more.
        const last = await this.read(tenant, trajectoryId, { offset: at, limit: 1 });
        if (last.items.length === 0) return;
        continue;
      }
      await this.#feed.wait(key, version, this.#opts.tailPollMs, signal);
    }
  }

  /** Seals the trajectory (idempotent): its digest is BLAKE3 of the canonical JSONL. */
  async seal(tenant: string, trajectoryId: string, { sealedAt }: { sealedAt?: Date } = {}): Promise<Sealed> {
    const key = this.#key(tenant, trajectoryId);
    const seal = await this.#cache.locks.run(key, async () => {
      const state = await this.#cache.reloadLocked(key, tenant, trajectoryId);
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
      this.#cache.remember(key, { status: 'sealed', seal: record });
      this.#feed.bump(key);
      return record;
    });
    return { ref: toTrajectoryRef(seal), seal };
  }

  /** Where the trajectory stands, from storage. */
  async head(tenant: string, trajectoryId: string): Promise<TrajectoryHead> {
    const key = this.#key(tenant, trajectoryId);
    const s = await this.#cache.reload(key, tenant, trajectoryId);
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
    const s = await this.#cache.reload(this.#key(tenant, trajectoryId), tenant, trajectoryId);
    if (s.status === 'deleted') throw deleted(trajectoryId, s.deletion);
    if (s.status !== 'sealed')
      throw new TrajectoryStoreError('not_found', `trajectory ${trajectoryId} is not sealed`);
    return verifySealed({ backend: this.backend, tenant, id: trajectoryId }, s.seal, expectedDigest);
  }

  /** Forgets cached state (after retention deleted it, or in tests that simulate a restart). */
  forget(tenant: string, trajectoryId: string): void {
    this.#cache.forget(this.#key(tenant, trajectoryId));
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

  async #closedInStorage(tenant: string, id: string): Promise<boolean> {
    const [seal, deletion] = await Promise.all([
      this.backend.stat({ tenant, path: layout.seal(id) }),
      this.backend.stat({ tenant, path: layout.deletion(id) }),
    ]);
    return seal !== null || deletion !== null;
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
    const cached = this.#cache.peek(key);
    let state = cached ?? (await this.#cache.reloadLocked(key, tenant, id));
    // A cached live state may be stale: another process (a replica's seal worker, retention) may have sealed
    // or deleted the trajectory since. Its seal would take no later chunk (a reload removes leftovers), so an
    // append acknowledged now would be lost: the seal and the tombstone are looked for before every write.
    if (cached && state.status === 'live' && (await this.#closedInStorage(tenant, id)))
      state = await this.#cache.reloadLocked(key, tenant, id);
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
