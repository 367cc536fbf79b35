// The daemon's loop: long-poll for as many leases as it has free slots, execute each in its own interval,
// heartbeat every `heartbeatMs` with the leases it holds (a lease the control plane calls `lost` has its
// compute killed at once), and drain on request: stop asking for leases, let the running intervals finish
// (up to the grace), keep heartbeating until then, return.
//
// A slot is a lease. A completion batch asks for the leases its settled intervals free (completions.ts,
// `NextLeases`): what comes back starts at once, so a busy runner sends no lease request of its own per
// freed slot; it long-polls only for the slots nobody asked for yet. `slots` bounds what is asked in flight
// too: the long-poll's `free` plus a batch's `next.free` never exceed the slots the leases held leave, so
// the two answers together never hold more leases than slots (the control plane caps each grant as well).
import type { NextLeases } from './completions.js';
import { executeInterval, type IntervalDeps, type IntervalSteps } from './interval.js';
import type { Lease } from './protocol.js';

export interface DaemonOptions extends IntervalDeps {
  readonly slots: number;
  /** Long-poll wait per lease request (≤ 25 s). */
  readonly waitMs?: number;
  readonly heartbeatMs?: number;
  /** How long a drain waits for running intervals before killing them. */
  readonly graceMs?: number;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

interface Held {
  readonly lease: Lease;
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

export class RunnerDaemon {
  readonly #o: DaemonOptions;
  readonly #held = new Map<string, Held>();
  /** Held intervals whose run a completion settled: their lease (slot) is gone while they wind down. */
  readonly #released = new Set<string>();
  /** Leases asked for and not answered yet: the long-poll's `free`, a completion batch's `next.free`. */
  #polling = 0;
  #reserved = 0;
  readonly #stop = new AbortController();
  #draining = false;
  /** A drain past its grace: whatever still arrives is killed at once too. */
  #killing = false;
  #slotFreed: (() => void) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;
  /** Intervals ended, by how: for tests and logs. */
  readonly ended = { completed: 0, aborted: 0, failed: 0 };

  constructor(options: DaemonOptions) {
    const next: NextLeases = {
      want: (settling) => {
        // A long-poll in flight says the queue was empty when it last looked: a grant with the batch would
        // most likely find nothing (a wasted claim); the poll takes what comes, then the freed slots.
        if (this.#draining || this.#polling > 0) return 0;
        const ask = Math.max(0, this.#free() + settling);
        this.#reserved += ask;
        return ask;
      },
      answered: (settled, leases, asked) => {
        // What this batch asked is answered (a batch in flight behind it keeps its own reservation).
        this.#reserved = Math.max(0, this.#reserved - asked);
        for (const runId of settled) if (this.#held.has(runId)) this.#released.add(runId);
        for (const lease of leases) this.#run(lease);
        if (this.#free() > 0) this.#wake();
      },
    };
    this.#o = { ...options, next };
  }

  /** Slots neither leased nor asked for. */
  #free(): number {
    return this.#o.slots - (this.#held.size - this.#released.size) - this.#polling - this.#reserved;
  }

  #wake(): void {
    const wake = this.#slotFreed;
    this.#slotFreed = undefined;
    wake?.();
  }

  get held(): readonly string[] {
    return [...this.#held.keys()];
  }

  get draining(): boolean {
    return this.#draining;
  }

  start(): void {
    if (this.#loop) return;
    this.#scheduleHeartbeat(this.#o.heartbeatMs ?? 2000);
    this.#loop = this.#leaseLoop();
  }

  /** Stop leasing, wait for what runs (up to the grace; then kill it), stop heartbeating. */
  async drain(graceMs = this.#o.graceMs ?? 60_000): Promise<void> {
    this.#draining = true;
    this.#stop.abort();
    this.#wake();
    await this.#loop?.catch(() => {});
    // Until nothing is held: a completion batch in flight when the drain began may still bring leases (the
    // control plane granted them; run, they settle instead of expiring into a requeue), and those are waited
    // for too.
    const all = (async () => {
      while (this.#held.size > 0) await Promise.all([...this.#held.values()].map((h) => h.done));
    })();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.#killing = true;
      for (const h of this.#held.values()) h.abort.abort();
      await all;
    }
    clearTimeout(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  #log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    this.#o.log?.(level, msg, fields);
  }

  async #leaseLoop(): Promise<void> {
    while (!this.#draining) {
      const free = this.#free();
      if (free <= 0) {
        await new Promise<void>((r) => {
          this.#slotFreed = r;
        });
        continue;
      }
      let leases: Lease[];
      this.#polling = free;
      try {
        leases = await this.#o.api.leases(free, this.#o.waitMs ?? 25_000, this.#stop.signal);
      } catch (err) {
        if (this.#draining) return;
        this.#log('warn', 'lease request failed; retrying', { err: String(err) });
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      } finally {
        this.#polling = 0;
      }
      for (const lease of leases) this.#run(lease);
    }
  }

  #run(lease: Lease): void {
    const abort = new AbortController();
    const steps: IntervalSteps = {};
    const done = executeInterval(lease, this.#o, abort.signal, steps)
      .then(
        (how) => {
          this.ended[how] += 1;
          this.#log('info', `interval ${how}`, { runId: lease.runId, epoch: lease.epoch, steps });
        },
        (err: unknown) => {
          this.ended.failed += 1;
          this.#log('error', 'interval failed', { runId: lease.runId, epoch: lease.epoch, err: String(err) });
        },
      )
      .finally(() => {
        this.#held.delete(lease.runId);
        this.#released.delete(lease.runId);
        this.#wake();
      });
    this.#held.set(lease.runId, { lease, abort, done });
    if (this.#killing) abort.abort();
  }

  #scheduleHeartbeat(everyMs: number): void {
    this.#heartbeat = setTimeout(async () => {
      await this.#beat();
      if (this.#heartbeat !== undefined) this.#scheduleHeartbeat(everyMs);
    }, everyMs);
  }

  async #beat(): Promise<void> {
    // In run id order, the order a completion batch releases its leases in: the renewal (when the plan
    // follows the list) then locks the rows in the same order, so the two do not deadlock each other.
    // (A settled interval winding down holds no lease any more: it is not named.)
    const leases = [...this.#held.values()]
      .filter((h) => !this.#released.has(h.lease.runId))
      .map((h) => ({ runId: h.lease.runId, epoch: h.lease.epoch }))
      .sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
    try {
      const answer = await this.#o.api.heartbeat(leases);
      for (const runId of answer.lost) {
        const h = this.#held.get(runId);
        if (h) {
          this.#log('warn', 'lease lost: killing its compute', { runId });
          h.abort.abort();
        }
      }
      if (answer.draining && !this.#draining) {
        this.#log('info', 'the control plane drains this runner');
        this.#draining = true;
        this.#stop.abort();
        this.#wake();
      }
    } catch (err) {
      this.#log('warn', 'heartbeat failed', { err: String(err) });
    }
  }
}
