// What this process remembers of trajectories: their states (LRU, bounded; an evicted one reloads from
// storage) and a lock per trajectory under which appends, seals and reloads of it run one at a time.
import type { ObjectBackend } from './backend.js';
import { loadState, type TrajectoryState } from './state.js';
import { KeyedLock } from './sync.js';

export class StateCache {
  readonly locks = new KeyedLock();
  readonly #states = new Map<string, TrajectoryState>();
  readonly #backend: ObjectBackend;
  readonly #size: number;

  constructor(backend: ObjectBackend, size: number) {
    this.#backend = backend;
    this.#size = size;
  }

  /** The cached state, without touching storage or the LRU order. */
  peek(key: string): TrajectoryState | undefined {
    return this.#states.get(key);
  }

  /** The cached state (now most recently used), or one loaded from storage. */
  async get(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    const cached = this.#states.get(key);
    if (!cached) return this.reload(key, tenant, id);
    this.remember(key, cached);
    return cached;
  }

  /** Loads the state from storage under the trajectory's lock. */
  reload(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    return this.locks.run(key, () => this.reloadLocked(key, tenant, id));
  }

  /** Loads the state from storage; the caller holds the trajectory's lock. */
  async reloadLocked(key: string, tenant: string, id: string): Promise<TrajectoryState> {
    const before = this.#states.get(key);
    const state = await loadState(this.#backend, tenant, id);
    // Storage is the truth; the running digests of this process's appends still hold if it agrees.
    if (
      state.status === 'live' &&
      before?.status === 'live' &&
      before.index.running &&
      before.index.eventCount === state.index.eventCount &&
      before.index.lastSeq === state.index.lastSeq
    )
      state.index.running = before.index.running;
    this.remember(key, state);
    return state;
  }

  remember(key: string, state: TrajectoryState): void {
    this.#states.delete(key);
    this.#states.set(key, state);
    if (this.#states.size > this.#size) this.#states.delete(this.#states.keys().next().value!);
  }

  forget(key: string): void {
    this.#states.delete(key);
  }
}
