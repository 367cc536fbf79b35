// The WFQ kernel. Per tenant and class, a FIFO; each node gets a virtual finish tag
// F = max(V_class, tenant's last F in that class) + 1 / weight — or V_class + 1 / weight when the tenant has
// no live (queued) node left in that class: the tags of cancelled nodes are not banked against it (WFQ's idle
// rule; served nodes' tags are ≤ V_class already, so cancelling and re-queueing gains nothing). Dispatch order:
//   1. aged first: a tenant whose oldest queued node has waited >= agingMs is aged; aged tenants are
//      served ahead of every class, oldest node first within the tenant, and by weight across tenants on
//      their own aged clock (`agedTag`), so a flood that ages cannot buy more than its weighted share;
//   2. then interactive, background, batch — strictly; within a class, the least head finish tag.
// Tenants, not nodes, sit in heaps keyed by their heads: O(log tenants) per operation (amortized;
// promotion and demotion each happen once per head). A blocked tenant (at its concurrency quota) leaves
// every heap until unblocked: it is skipped, it never blocks anyone else.
//
// Tags are written as `start + count / weight` (`finishTag`), never summed step by step, so a store that
// computes k tags at once (the control plane's SQL: one statement per batch) gets the very same floats.
// Aged service is a start-time fair queue over tenants: a tenant that becomes aged (is *promoted*) starts
// at max(its last aged finish, the aged clock) and its j-th aged service is tagged start + j / weight; it
// stays aged ("continuing") while its oldest node was already aged at its last aged event
// (`isContinuing`: oldest.enqueuedAt <= agedAt − agingMs). Blocking forgets agedAt, so an unblocked tenant
// is promoted afresh (no credit for the time it was blocked). The SQL claim computes the same order from
// the same state (adm_tenants.aged_start / aged_n / aged_at, adm_vtime lane AGED_LANE) — a property test
// in the control plane checks its claims equal `next` here.
// This core works on handles — the caller holds its tenants' `WfqTenant`s, and its nodes are numbers in a
// `WfqNodes` table of typed arrays — so nothing on the hot path is looked up by id or allocated per node;
// `FairQueue` is the id-keyed API over it.
import { Fifo } from './fifo.js';
import { IdHeap } from './id-heap.js';
import type { WfqNodes } from './wfq-nodes.js';

/** The aged clock's row in a store that keeps the class clocks by lane (0–2). */
export const AGED_LANE = 3;

/**
 * The weights a tenant may have. Tags grow by 1 / weight per service, so a weight near zero would push a
 * class clock to Infinity (or so far that every other tenant's 1 / weight step is lost in rounding) and
 * turn the class into one FIFO for every tenant; a SQL store's float8 division would overflow instead.
 */
export const MIN_WEIGHT = 1e-6;
export const MAX_WEIGHT = 1_000_000;

/** Throws a RangeError for a weight outside [MIN_WEIGHT, MAX_WEIGHT] (NaN included). */
export function assertWeight(weight: number): void {
  if (!(weight >= MIN_WEIGHT && weight <= MAX_WEIGHT)) {
    throw new RangeError(`weight must be within [${MIN_WEIGHT}, ${MAX_WEIGHT}], got ${weight}`);
  }
}

/** The one tag formula: the count-th service after `start`, at `weight` (a store must compute it so). */
export function finishTag(start: number, count: number, weight: number): number {
  return start + count / weight;
}

/** A tenant is still aged when its oldest queued node had already aged at its last aged event. */
export function isContinuing(oldestEnqueuedAt: number, agedAt: number, agingMs: number): boolean {
  return oldestEnqueuedAt <= agedAt - agingMs;
}

export class WfqTenant {
  weight = 1;
  blocked = false;
  /** Live nodes queued. */
  count = 0;
  /** Aged service: tags are finishTag(agedStart, agedServed + 1, weight) onwards. */
  agedStart = 0;
  agedServed = 0;
  /** `now` of its last promotion or aged service; -Infinity when none counts (never, or blocked since). */
  agedAt = Number.NEGATIVE_INFINITY;
  readonly lanes: readonly [Fifo, Fifo, Fifo];
  /** Per lane: its last finish tag is finishTag(laneStart, laneCount, weight). */
  readonly laneStart = [0, 0, 0];
  readonly laneCount = [0, 0, 0];
  /** Per lane: live nodes queued (none left: the next node restarts the lane at the class clock). */
  readonly laneLive = [0, 0, 0];

  /** Its number in the queue's heaps. */
  constructor(
    readonly id: number,
    nodes: WfqNodes,
  ) {
    this.lanes = [new Fifo(nodes), new Fifo(nodes), new Fifo(nodes)];
  }
}

export class Wfq {
  private count = 0;
  private readonly members: WfqTenant[] = [];
  private readonly byClass = [new IdHeap(), new IdHeap(), new IdHeap()];
  /** Not-aged tenants by their oldest head; promotion pops from the top as time passes. */
  private readonly waiting = new IdHeap();
  /** Aged (continuing) tenants by their next aged tag. */
  private readonly aged = new IdHeap();
  private readonly clock = [0, 0, 0];
  private agedClock = 0;
  private seq = 0;

  constructor(
    readonly agingMs: number,
    readonly nodes: WfqNodes,
  ) {}

  get size(): number {
    return this.count;
  }

  /** A new tenant handle (weight 1, unblocked, empty). */
  tenant(): WfqTenant {
    const t = new WfqTenant(this.members.length, this.nodes);
    this.members.push(t);
    return t;
  }

  /** A new weight applies from the tenant's next tag: its last tags are rebased (kept as they are). */
  setWeight(t: WfqTenant, weight: number): void {
    assertWeight(weight);
    if (t.weight === weight) return;
    for (let lane = 0; lane < 3; lane++) {
      t.laneStart[lane] = finishTag(t.laneStart[lane]!, t.laneCount[lane]!, t.weight);
      t.laneCount[lane] = 0;
    }
    t.agedStart = finishTag(t.agedStart, t.agedServed, t.weight);
    t.agedServed = 0;
    t.weight = weight;
    this.refresh(t, -1);
  }

  /** A tenant at its concurrency quota is blocked: skipped by `next` until unblocked. */
  setBlocked(t: WfqTenant, blocked: boolean): void {
    if (t.blocked === blocked) return;
    t.blocked = blocked;
    if (blocked) t.agedAt = Number.NEGATIVE_INFINITY;
    this.refresh(t, -1);
  }

  /** Queue node `n` (its enqueuedAt and lane set by the caller). */
  enqueue(t: WfqTenant, n: number): void {
    const nodes = this.nodes;
    const lane = nodes.lane[n]!;
    const fifo = t.lanes[lane as 0 | 1 | 2];
    const clock = this.clock[lane]!;
    if (t.laneLive[lane] === 0 || clock > finishTag(t.laneStart[lane]!, t.laneCount[lane]!, t.weight)) {
      t.laneStart[lane] = clock;
      t.laneCount[lane] = 1;
    } else t.laneCount[lane]!++;
    nodes.finish[n] = finishTag(t.laneStart[lane]!, t.laneCount[lane]!, t.weight);
    nodes.seq[n] = this.seq++;
    nodes.removed[n] = 0;
    fifo.push(n);
    t.laneLive[lane]!++;
    t.count++;
    this.count++;
    // The tenant's oldest may change (a node enqueued with an earlier enqueuedAt, or a first one).
    this.refresh(t, fifo.peek() === n ? lane : -2);
  }

  /** Take a queued node out (cancelled before dispatch). It must be queued in `t`. */
  remove(t: WfqTenant, n: number): void {
    const lane = this.nodes.lane[n]!;
    this.nodes.removed[n] = 1;
    t.laneLive[lane]!--;
    t.count--;
    this.count--;
    t.lanes[lane as 0 | 1 | 2].noteRemoved();
    this.refresh(t, lane);
  }

  /** Pop the next node to dispatch at `now` (non-decreasing across calls), or -1 if every non-blocked tenant is empty. */
  next(now: number): number {
    // Promotion: the waiting heap's key is each tenant's oldest enqueuedAt, so the test reads no tenant.
    for (let id = this.waiting.peek(); id >= 0; id = this.waiting.peek()) {
      if (now - this.waiting.peekA() < this.agingMs) break;
      const top = this.members[id]!;
      this.waiting.delete(id);
      top.agedStart = Math.max(finishTag(top.agedStart, top.agedServed, top.weight), this.agedClock);
      top.agedServed = 0;
      top.agedAt = now;
      this.aged.set(id, finishTag(top.agedStart, 1, top.weight), this.nodes.seq[this.oldest(top)]!);
    }
    const id = this.aged.peek();
    if (id >= 0) {
      const top = this.members[id]!;
      top.agedServed++;
      this.agedClock = Math.max(this.agedClock, finishTag(top.agedStart, top.agedServed, top.weight));
      top.agedAt = now;
      return this.serve(top, this.oldest(top));
    }
    for (let lane = 0; lane < 3; lane++) {
      const id = this.byClass[lane]!.peek();
      if (id >= 0) {
        const top = this.members[id]!;
        return this.serve(top, top.lanes[lane as 0 | 1 | 2].peek());
      }
    }
    return -1;
  }

  /** The tenant's oldest live head across its lanes (enqueuedAt, then seq), or -1. */
  private oldest(t: WfqTenant): number {
    const { enqueuedAt, seq } = this.nodes;
    let best = -1;
    for (const fifo of t.lanes) {
      const head = fifo.peek();
      if (
        head >= 0 &&
        (best < 0 ||
          enqueuedAt[head]! < enqueuedAt[best]! ||
          (enqueuedAt[head] === enqueuedAt[best] && seq[head]! < seq[best]!))
      )
        best = head;
    }
    return best;
  }

  private serve(t: WfqTenant, n: number): number {
    const lane = this.nodes.lane[n]!;
    t.lanes[lane as 0 | 1 | 2].shift();
    t.laneLive[lane]!--;
    t.count--;
    this.count--;
    const finish = this.nodes.finish[n]!;
    if (finish > this.clock[lane]!) this.clock[lane] = finish;
    this.refresh(t, lane);
    return n;
  }

  /**
   * Re-key the tenant from its current heads: in one class heap if only that lane changed (-1: all, -2:
   * none), and in the aged heap (continuing) or the waiting heap (by its oldest).
   */
  private refresh(t: WfqTenant, only: number): void {
    const { enqueuedAt, finish, seq } = this.nodes;
    if (only !== -2) {
      const from = Math.max(only, 0);
      const to = only < 0 ? 2 : only;
      for (let lane = from; lane <= to; lane++) {
        const head = t.blocked ? -1 : t.lanes[lane as 0 | 1 | 2].peek();
        if (head >= 0) this.byClass[lane]!.set(t.id, finish[head]!, seq[head]!);
        else this.byClass[lane]!.delete(t.id);
      }
    }
    const first = t.blocked || t.count === 0 ? -1 : this.oldest(t);
    if (first < 0) {
      this.waiting.delete(t.id);
      this.aged.delete(t.id);
    } else if (isContinuing(enqueuedAt[first]!, t.agedAt, this.agingMs)) {
      this.waiting.delete(t.id);
      this.aged.set(t.id, finishTag(t.agedStart, t.agedServed + 1, t.weight), seq[first]!);
    } else {
      this.aged.delete(t.id);
      this.waiting.set(t.id, enqueuedAt[first]!, seq[first]!);
    }
  }
}
