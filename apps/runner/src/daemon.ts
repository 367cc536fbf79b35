// The daemon's loop: long-poll for as many leases as it has free slots, execute each in its own interval,
// heartbeat every `heartbeatMs` with the leases it holds — on that interval whatever an earlier heartbeat still
// waits for (at most `HEARTBEATS_IN_FLIGHT` at once, each bounded by `heartbeatTimeoutMs`), a renewal counted
// from the send of the heartbeat that brought it (a lease the control plane calls `lost` has its compute killed
// at once, and so has one no heartbeat renewed within its `leaseMs`) — and drain on request:
// stop asking for leases, let the running intervals finish (up to the grace; then kill them, and wait at
// most the request timeout more for them to wind down: what is left is abandoned, its lease expiring into a
// requeue), keep heartbeating until then, return. Every call to the control plane is bounded by the request
// timeout (timed-api.ts).
//
// A slot is a sandbox's compute, not a lease. An interval holds its slot from its provision until its
// command has exited and its usage and energy are read (interval.ts, `hooks.computed`); its artifacts, the
// dispose and the signed completion's round trip run behind it, its lease still held (heartbeated) until the
// completion settles it, while the slot already executes the next lease. So the runner holds up to
// `leaseBound(slots)` leases — its slots executing plus the ones settling behind them — and never executes
// more than `slots` at once: what is asked for in flight (the long-poll's `free`, a completion batch's
// `next.free`) never exceeds the slots free of compute nor the lease room the held leases leave, and a lease
// that still finds no slot (a control plane granting more than asked) waits here for one.
//
// A freed slot is leased promptly (`leaseOnFree`). By default (`'batch'`) it is asked for by the next
// completion batch — one is on its way while any interval settles, and asks for every free slot no long-poll
// asks for (completions.ts, `NextLeases`) — and the long-poll asks only when no batch will (nothing settles
// but intervals uploading files of out/, which may take minutes, or the last grant came back short). `'poll'` asks at once with the long-poll, the batches carrying what it
// does not: a slot then never waits on a completion, but measured slower (README, "Figures": its grants race
// the batches' grants for the same queue rows, and a grant that finds none waits for a wake).
import { setTimeout as sleep } from 'node:timers/promises';
import type { NextLeases } from './completions.js';
import { type DaemonOptions, leaseBound } from './daemon-options.js';
import { armExpiry, endsWithin, HeartbeatPacer, type Held, renewExpiry } from './held-lease.js';
import { executeInterval, type IntervalSteps } from './interval.js';
import type { Lease } from './protocol.js';
import { REQUEST_TIMEOUT_MS, withRequestTimeout } from './timed-api.js';

export { type DaemonOptions, LEASES_PER_SLOT, leaseBound } from './daemon-options.js';

export class RunnerDaemon {
  readonly #o: DaemonOptions;
  readonly #bound: number;
  readonly #requestTimeoutMs: number;
  readonly #held = new Map<string, Held>();
  /**
   * Intervals whose run was leased to this runner again at a higher epoch (their lease lost: heartbeats
   * failed past its expiry, and the run requeued to here): aborted, winding down, out of `#held`.
   */
  readonly #superseded = new Set<Held>();
  /** Held intervals whose run a completion settled: their lease is gone while they wind down. */
  readonly #released = new Set<string>();
  /** Intervals executing (their compute holds a slot). */
  #executing = 0;
  /** Leases that found no slot free, in arrival order: they start as slots free (never past `slots`). */
  readonly #waiting: Held[] = [];
  /** Leases asked for and not answered yet: the long-poll's `free`, a completion batch's `next.free`. */
  #polling = 0;
  #reserved = 0;
  /** The last grant answered fewer than it was asked for: the queue was empty when it looked. */
  #dry = false;
  readonly #stop = new AbortController();
  #draining = false;
  /** A drain past its grace: whatever still arrives is killed at once too. */
  #killing = false;
  #slotFreed: (() => void) | undefined;
  #heartbeats: HeartbeatPacer | undefined;
  /** The shortest `leaseMs` granted yet: it bounds a heartbeat's wait for its answer. */
  #shortestLeaseMs = Number.POSITIVE_INFINITY;
  #loop: Promise<void> | undefined;
  /** Intervals ended, by how: for tests and logs. */
  readonly ended = { completed: 0, aborted: 0, failed: 0 };
  /** The most intervals ever executing at once, and leases ever held at once: for tests and logs. */
  readonly peak = { executing: 0, held: 0 };

  constructor(options: DaemonOptions) {
    const next: NextLeases = {
      want: (settling) => {
        // A long-poll in flight after a grant that came back short says the queue was empty when it last
        // looked: a grant with the batch would most likely find nothing (a wasted claim); the poll takes
        // what comes, then the freed slots.
        if (this.#draining || (this.#polling > 0 && this.#dry)) return 0;
        // The batch's settled items free lease room (their leases end), not slots (their compute is done).
        const ask = Math.max(0, Math.min(this.#computeFree(), this.#leaseRoom() + settling));
        this.#reserved += ask;
        return ask;
      },
      answered: (settled, leases, asked) => {
        // What this batch asked is answered (a batch in flight behind it keeps its own reservation).
        this.#reserved = Math.max(0, this.#reserved - asked);
        if (asked > 0) this.#dry = leases.length < asked;
        for (const runId of settled) if (this.#held.has(runId)) this.#released.add(runId);
        for (const lease of leases) this.#run(lease);
        if (this.#free() > 0) this.#wake();
      },
    };
    this.#requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    this.#o = { ...options, api: withRequestTimeout(options.api, this.#requestTimeoutMs), next };
    this.#bound = leaseBound(options.slots);
  }

  /** Slots free of compute and not asked for (a waiting lease has its slot promised). */
  #computeFree(): number {
    return this.#o.slots - this.#executing - this.#waiting.length - this.#polling - this.#reserved;
  }

  /** Leases the bound still allows, less what is asked for. */
  #leaseRoom(): number {
    return this.#bound - (this.#held.size - this.#released.size) - this.#polling - this.#reserved;
  }

  /** Leases to ask for: slots free of compute, within the lease bound. */
  #free(): number {
    return Math.min(this.#computeFree(), this.#leaseRoom());
  }

  /**
   * Settling intervals not answered yet whose completion is queued, in flight or moments away: a batch
   * carrying them is on its way. (Not the ones uploading files of out/: an upload may take minutes.)
   */
  #settling(): number {
    let n = 0;
    for (const [runId, h] of this.#held) if (h.phase === 'settling' && !this.#released.has(runId)) n += 1;
    return n;
  }

  #wake(): void {
    const wake = this.#slotFreed;
    this.#slotFreed = undefined;
    wake?.();
  }

  get held(): readonly string[] {
    return [...this.#held.keys()];
  }

  /** Intervals executing now (never more than `slots`). */
  get executing(): number {
    return this.#executing;
  }

  /** Leases asked for and not answered yet (a long-poll's and completion batches'): for tests and logs. */
  get asking(): number {
    return this.#polling + this.#reserved;
  }

  get draining(): boolean {
    return this.#draining;
  }

  start(): void {
    if (this.#loop) return;
    this.#heartbeats = new HeartbeatPacer({
      everyMs: this.#o.heartbeatMs ?? 2000,
      requestTimeoutMs: this.#requestTimeoutMs,
      shortestLeaseMs: () => this.#shortestLeaseMs,
      beat: (signal) => this.#beat(signal),
      log: (msg, fields) => this.#log('warn', msg, fields),
    });
    this.#loop = this.#leaseLoop();
  }

  /** Stop leasing, wait for what runs and settles (up to the grace; then kill it), stop heartbeating. */
  async drain(graceMs = this.#o.graceMs ?? 60_000): Promise<void> {
    this.#draining = true;
    this.#stop.abort();
    this.#wake();
    await this.#loop?.catch(() => {});
    // Until nothing is held — executing, waiting or settling: a completion batch in flight when the drain
    // began may still bring leases (the control plane granted them; run, they settle instead of expiring
    // into a requeue), and those are waited for too.
    const all = (async () => {
      while (this.#held.size + this.#superseded.size > 0)
        await Promise.all([...this.#held.values(), ...this.#superseded].map((h) => h.done));
    })();
    if (!(await endsWithin(all, graceMs))) {
      this.#killing = true;
      for (const h of this.#held.values()) h.abort.abort();
      // Killed, an interval ends at once (its upload and its wait for a completion cut too) but for a call
      // in flight, which its request timeout ends — or a driver that does not answer: past that long, what is
      // left is abandoned (its lease expires and its run requeues), and the drain returns.
      if (!(await endsWithin(all, this.#requestTimeoutMs)))
        this.#log('warn', 'drain: intervals abandoned after their kill', {
          runIds: [...this.#held.keys(), ...[...this.#superseded].map((h) => h.lease.runId)],
        });
    }
    this.#heartbeats?.stop();
  }

  #log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    this.#o.log?.(level, msg, fields);
  }

  /**
   * Whether a free slot waits for the completion batch instead of a lease request of its own (`'batch'`):
   * while an interval settles (not uploading files), a batch will ask for it — unless the last grant came
   * back short.
   */
  #batchWillAsk(): boolean {
    return this.#o.leaseOnFree !== 'poll' && !this.#dry && this.#settling() > 0;
  }

  async #leaseLoop(): Promise<void> {
    while (!this.#draining) {
      const free = this.#free();
      if (free <= 0 || this.#batchWillAsk()) {
        await new Promise<void>((r) => {
          this.#slotFreed = r;
        });
        continue;
      }
      let leases: Lease[] | null = null;
      this.#polling = free;
      try {
        leases = await this.#o.api.leases(free, this.#o.waitMs ?? 25_000, this.#stop.signal);
      } catch (err) {
        if (!this.#draining) this.#log('warn', 'lease request failed; retrying', { err: String(err) });
      } finally {
        this.#polling = 0;
      }
      if (leases === null) {
        // The pause before the retry asks for nothing (a completion batch may ask for the slots meanwhile),
        // and a drain ends it at once.
        if (this.#draining) return;
        await sleep(1000, undefined, { signal: this.#stop.signal }).catch(() => {});
        continue;
      }
      // A long-poll answers when anything came (or at its wait's end): fewer than asked, the queue is dry.
      this.#dry = leases.length < free;
      for (const lease of leases) this.#run(lease);
    }
  }

  #run(lease: Lease): void {
    const before = this.#held.get(lease.runId);
    if (before) {
      if (before.lease.epoch >= lease.epoch) {
        this.#log('warn', 'lease ignored: its run is held at this epoch or a later one', {
          runId: lease.runId,
          epoch: lease.epoch,
          held: before.lease.epoch,
        });
        return;
      }
      // The run came back at a higher epoch. Unless a completion settled the earlier interval (a retry granted
      // with its batch), that one lost its lease: it is killed (it sends nothing). Either way it winds down out
      // of `#held`, which now holds the new lease.
      if (!this.#released.has(lease.runId)) {
        this.#log('warn', 'lease superseded: killing its compute', {
          runId: lease.runId,
          epoch: before.lease.epoch,
          by: lease.epoch,
        });
        before.abort.abort();
      }
      this.#held.delete(lease.runId);
      this.#released.delete(lease.runId);
      this.#superseded.add(before);
    }
    const abort = new AbortController();
    const steps: IntervalSteps = {};
    let begin: () => void = () => {};
    const go = new Promise<void>((r) => {
      begin = r;
    });
    const h: Held = {
      lease,
      abort,
      phase: 'waiting',
      begin: () => begin(),
      // After a superseded interval of the run is gone: both drivers name a run's sandbox by its labels, and
      // the earlier one's dispose would take the new one's sandbox.
      done: go
        .then(() => before?.done)
        .then(() => {
          if (abort.signal.aborted) return 'aborted' as const;
          const hooks = {
            computed: () => this.#computed(h),
            // Uploads may take long: a slot waiting for this interval's batch asks with a request instead.
            uploading: () => {
              if (h.phase !== 'settling') return;
              h.phase = 'uploading';
              if (this.#free() > 0) this.#wake();
            },
            completing: () => {
              if (h.phase === 'uploading') h.phase = 'settling';
            },
          };
          return executeInterval(lease, this.#o, abort.signal, steps, hooks);
        })
        .then(
          (how) => {
            this.ended[how] += 1;
            this.#log('info', `interval ${how}`, { runId: lease.runId, epoch: lease.epoch, steps });
          },
          (err: unknown) => {
            this.ended.failed += 1;
            this.#log('error', 'interval failed', {
              runId: lease.runId,
              epoch: lease.epoch,
              err: String(err),
            });
          },
        )
        .finally(() => {
          clearTimeout(h.expiry);
          this.#computed(h); // an interval that ended before its compute did frees its slot here
          // A superseded interval leaves its run's entries to the lease that replaced it.
          if (!this.#superseded.delete(h)) {
            this.#held.delete(lease.runId);
            this.#released.delete(lease.runId);
          }
          this.#wake();
        }),
    };
    this.#held.set(lease.runId, h);
    this.#shortestLeaseMs = Math.min(this.#shortestLeaseMs, lease.leaseMs);
    // Granted at the latest now: its lease runs `leaseMs` from here until a heartbeat renews it.
    this.#arm(h, performance.now());
    this.peak.held = Math.max(this.peak.held, this.#held.size - this.#released.size);
    // Aborted while it waits for a slot (lost, killed): it ends without starting.
    abort.signal.addEventListener(
      'abort',
      () => {
        const i = this.#waiting.indexOf(h);
        if (i >= 0) {
          this.#waiting.splice(i, 1);
          h.begin();
        }
      },
      { once: true },
    );
    if (this.#killing) abort.abort();
    if (abort.signal.aborted) h.begin();
    else if (this.#executing < this.#o.slots) this.#execute(h);
    else this.#waiting.push(h);
  }

  #execute(h: Held): void {
    h.phase = 'executing';
    this.#executing += 1;
    this.peak.executing = Math.max(this.peak.executing, this.#executing);
    h.begin();
  }

  /** The interval's compute is done (or it ended): its slot goes to a waiting lease, else to a new one. */
  #computed(h: Held): void {
    if (h.phase !== 'executing') return;
    h.phase = 'settling';
    this.#executing -= 1;
    const waiting = this.#waiting.shift();
    if (waiting) this.#execute(waiting);
    else this.#wake();
  }

  /** Arms the kill of `h` where its lease ends unrenewed (held-lease.ts, `armExpiry`): it never runs on unleased. */
  #arm(h: Held, from: number): void {
    armExpiry(h, from, () => this.#expired(h));
  }

  #expired(h: Held): void {
    const { runId, epoch } = h.lease;
    if (this.#held.get(runId) !== h || this.#released.has(runId) || h.abort.signal.aborted) return;
    this.#log('warn', 'lease expired without a renewal: killing its compute', { runId, epoch });
    h.abort.abort();
  }

  /** One heartbeat (`signal` ends it: its timeout, the drain's end); the pacer sends it and logs its failure. */
  async #beat(signal: AbortSignal): Promise<void> {
    // In run id order, the order a completion batch releases its leases in: the renewal (when the plan
    // follows the list) then locks the rows in the same order, so the two do not deadlock each other.
    // Every lease held is named — executing, waiting for a slot, settling — until a completion settles it
    // (a settled interval winding down holds no lease any more: it is not named).
    const named = [...this.#held.values()]
      .filter((h) => !this.#released.has(h.lease.runId))
      .sort((a, b) => (a.lease.runId < b.lease.runId ? -1 : a.lease.runId > b.lease.runId ? 1 : 0));
    const leases = named.map((h) => ({ runId: h.lease.runId, epoch: h.lease.epoch }));
    const sentAt = performance.now();
    const answer = await this.#o.api.heartbeat(leases, signal);
    const lost = new Set(answer.lost);
    // Every lease named and not lost was renewed (from before this call was sent, at the latest) — unless a
    // heartbeat sent later renewed it already, or its interval was killed meanwhile (lost: nothing revives it).
    for (const h of named) {
      const { runId } = h.lease;
      if (lost.has(runId) || this.#held.get(runId) !== h || h.abort.signal.aborted) continue;
      renewExpiry(h, sentAt, () => this.#expired(h));
    }
    for (const runId of answer.lost) {
      // The interval this heartbeat named: a later lease of the run that came meanwhile is not lost.
      const h = named.find((n) => n.lease.runId === runId);
      // (A run a completion settled meanwhile is answered lost too: nothing of it is left to kill.)
      if (h && this.#held.get(runId) === h && !this.#released.has(runId)) {
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
  }
}
